"""Trusted grading without nbgrader: test cells are judged outside the sandbox; no sandbox, no grading."""

from __future__ import annotations

import nbformat
import pytest

from conftest import EXAMPLES, RELEASE, SOLUTIONS, cells_by_id
from grader.judge import runner
from grader.isolation import sandbox
from grader.classroom.course import build_submission, mistake_source


def test_without_a_sandbox_grading_refuses_unless_the_instructor_allows_it(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox, "available", lambda: (False, "bubblewrap (bwrap) is not installed"))
    with pytest.raises(runner.SandboxRefused, match="bubblewrap .* not installed.*--allow-unsandboxed"):
        runner.grade_notebook(SOLUTIONS / "02_custom_function.ipynb", SOLUTIONS / "02_custom_function.ipynb")


@pytest.mark.slow
def test_allowed_unsandboxed_grading_still_judges_outside_the_student_process(monkeypatch):
    monkeypatch.setattr(sandbox, "available", lambda: (False, "not Linux"))
    result = runner.grade_notebook(SOLUTIONS / "02_custom_function.ipynb", SOLUTIONS / "02_custom_function.ipynb",
                                   allow_unsandboxed=True)
    assert result.score == result.max_score == 6


@pytest.mark.slow
def test_a_patched_gradcheck_cannot_pass_a_wrong_backward(tmp_path):
    wrong = mistake_source(EXAMPLES / "mistakes" / "square-wrong-sign.py")
    patch = "\nimport torch\ntorch.autograd.gradcheck = lambda *a, **k: True\ntorch.autograd.gradgradcheck = lambda *a, **k: True\n"
    build_submission(RELEASE, {"square": wrong + patch}, tmp_path)
    # under the course's policy the patch is refused (changing a module of torch's) ...
    result = runner.grade_notebook(tmp_path / "03_double_backward.ipynb", SOLUTIONS / "03_double_backward.ipynb")
    square = {c.grade_id: c.status for c in result.cells if c.grade_id.startswith("square-")}
    assert square == {"square-forward": "passed", "square-first-order": "failed", "square-second-order": "failed",
                      "square-structure": "passed"}
    assert result.restored == []
    # ... and beneath it, the guard puts torch's functions back before observing
    result = runner.grade_notebook(tmp_path / "03_double_backward.ipynb", SOLUTIONS / "03_double_backward.ipynb",
                                   policy=False)
    square = {c.grade_id: c.status for c in result.cells if c.grade_id.startswith("square-")}
    assert square == {"square-forward": "passed", "square-first-order": "failed", "square-second-order": "failed",
                      "square-structure": "passed"}
    assert "torch.autograd.gradcheck" in " ".join(result.restored)


def test_test_cells_are_parsed_not_run():
    from grader.judge import testcells

    with pytest.raises(testcells.UnsupportedTestCell, match="only grader imports"):
        testcells.parse("import os\nos.system('rm -rf /')\nchecks.forward('square', Square.apply)", "square-forward")
    cell = cells_by_id(SOLUTIONS / "03_double_backward.ipynb")["sinh-second-order"]
    calls = testcells.parse(cell.source, "sinh-second-order")
    assert [c.hidden for c in calls] == [False, True] and calls[0].entry == "sinh"


# IPython's transformations of a cell, skipped where they cannot change it (grader.sandboxed.shell.make_shell): the shortcut
# must give IPython's own result on every cell it takes, and leave IPython's syntax to IPython.
TRICKY_CELLS = [
    "x = 1 != 2", "a = '%d' % 3", "%timeit x = 1", "x?", "x??", "!ls", "files = !ls", "a = %pwd", "  x = 1",
    "\nx = 1", "\t\nx = 1", ">>> x = 1", "... x = 1", "In [1]: x = 1", "y = (1\n     / 2)", "print('what?')",
    "f'{x!r}'", "%%time\nx = 1", "/print 1", ",print a b", ";print a b", "x = 1\n", "x = 1", "", "\n",
    "def f():\n    return 1\n", "async def f():\n    await g()\n", "await asyncio.sleep(0)",
    "[x async for x in g()]", "for i in range(3):\n    pass\n%time 1\n",
]


def _code_cells() -> list[str]:
    import nbformat

    sources = [c.source for folder in (SOLUTIONS, RELEASE) for path in sorted(folder.glob("*.ipynb"))
               for c in nbformat.read(str(path), as_version=4).cells if c.cell_type == "code"]
    sources += [path.read_text() for path in sorted(EXAMPLES.rglob("*.py"))]
    sources += [path.read_text() for path in sorted((EXAMPLES.parent / "tests" / "adversarial").glob("*.py"))]
    return sources + TRICKY_CELLS


@pytest.fixture
def sandbox_shell():
    """The sandbox's shell, made in this process for the test and forgotten after it: IPython keeps one shell per
    process, and a shell left behind makes every later self-check in this process behave as in a student's kernel
    (an unfinished stub reported instead of raised), which failed test_checks' catalogue run after this file."""
    from IPython.core.interactiveshell import InteractiveShell

    from grader.sandboxed import child

    existed = InteractiveShell.initialized()
    yield child.make_shell()
    if not existed:
        InteractiveShell.clear_instance()


def test_ipythons_transformations_are_skipped_only_where_they_change_nothing(sandbox_shell):
    from IPython.core.inputtransformer2 import TransformerManager

    from grader.sandboxed import child

    shell = sandbox_shell
    ipython = TransformerManager()  # a fresh one: what IPython itself does
    cells = _code_cells()
    assert len(cells) > 300
    shortcut = 0
    for cell in cells:
        assert shell.input_transformer_manager.transform_cell(cell) == ipython.transform_cell(cell), cell
        shortcut += not child.NEEDS_IPYTHON_TRANSFORMS.search(cell)
    assert shortcut > len(cells) / 2, "the shortcut is taken for most of the course's cells"
    for cell in ("%time 1", "x = !ls", "x?", ">>> x = 1", "  x = 1"):
        assert child.NEEDS_IPYTHON_TRANSFORMS.search(cell), cell


def test_a_cell_with_top_level_await_still_runs_as_in_a_kernel(sandbox_shell):
    shell = sandbox_shell
    for cell in ("import asyncio\nawait asyncio.sleep(0)\nawaited = 1", "x = [1]\nasync def f():\n    return 2\n"):
        transformed = shell.transform_cell(cell)
        assert shell.should_run_async(cell, transformed_cell=transformed) == ("await asyncio" in cell), cell
    result = shell.run_cell("import asyncio\nawait asyncio.sleep(0)\nawaited = 1", store_history=False)
    assert result.success and shell.user_ns["awaited"] == 1
    assert not shell.should_run_async("x = 1", transformed_cell="x = 1\n")


@pytest.mark.slow
def test_an_unfinished_softplus_costs_its_own_cells_and_nothing_on_hvp_or_the_penalty(tmp_path):
    """Notebook 4 with hvp written right, notebook 3's Functions pasted and Softplus still the released stub, graded
    as autograde grades it: Softplus's cells score 0; every hvp cell passes, and says which probes it did not count
    and that Softplus's cell is the one to fix. Old code: the hvp cells failed with "hvp(f, x, v) is not implemented
    yet ... in the answer cell `hvp`". Notebook 5 (issue 32: the penalty moved there) with gradient_penalty right and
    nothing pasted into its section 0: every penalty cell passes (the probe through Softplus waits for the paste)."""
    four, five = (cells_by_id(SOLUTIONS / name) for name in ("04_modern_functions.ipynb", "05_markers_and_capstone.ipynb"))
    build_submission(RELEASE, {"own-functions": four["own-functions"].source, "hvp": four["hvp"].source,
                               "penalty": five["penalty"].source}, tmp_path)
    result = runner.grade_notebook(tmp_path / "04_modern_functions.ipynb", SOLUTIONS / "04_modern_functions.ipynb")
    cells = {c.grade_id: c for c in result.cells}
    assert {g: c.status for g, c in cells.items() if g.startswith("softplus-")} == dict.fromkeys(
        [g for g in cells if g.startswith("softplus-")], "failed")
    for grade_id in ("hvp-double-backward", "hvp-forward-over-reverse"):
        cell = cells[grade_id]
        assert (cell.status, cell.points) == ("passed", cell.max_points), (grade_id, cell.message)
        assert "not counted: the probes through your Softplus" in cell.message, (grade_id, cell.message)
        assert "answer cell `softplus`" in cell.message and "answer cell `hvp`" not in cell.message, cell.message
    result = runner.grade_notebook(tmp_path / "05_markers_and_capstone.ipynb",
                                   SOLUTIONS / "05_markers_and_capstone.ipynb")
    cells = {c.grade_id: c for c in result.cells}
    for grade_id in ("penalty-value", "penalty-gradient"):
        cell = cells[grade_id]
        assert (cell.status, cell.points) == ("passed", cell.max_points), (grade_id, cell.message)


@pytest.mark.slow
def test_a_notebook_that_scores_nothing_runs_nothing(tmp_path):
    """Notebook 6 (the labs) has no test cell: grading it runs none of its cells, not even a student's own
    exploration the policy would refuse, so it costs no worker time and its feedback shows no refusal (issue 29:
    playgrounds are never refused). Old code: its imports cell ran in a worker, and an edited lab cell that uses
    ctypes was refused in the feedback of a notebook worth 0 points."""
    build_submission(RELEASE, {}, tmp_path)
    path = tmp_path / "06_labs.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import ctypes\nprint(ctypes.CDLL(None))"))  # a student's exploration
    nbformat.write(nb, str(path))
    result = runner.grade_notebook(path, SOLUTIONS / "06_labs.ipynb")
    assert (result.score, result.max_score, result.cells, result.problem) == (0, 0, [], "")
    assert result.seconds < 0.5, result.seconds
