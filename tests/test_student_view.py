"""What a student sees when a self-check fails: the diagnosis, whole, and nothing of the grader.

In a notebook, IPython renders an exception that defines ``_render_traceback_()`` with exactly the lines it
returns; ``nbgrader validate`` prints those lines (the error output's ``traceback``), each indented by 4 and
cut at 87 characters. So every exception a check raises at a student renders as its diagnosis, wrapped to
fit, with no frame of ``grader/``; ``str(exc)`` stays the diagnosis on its own lines.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import torch

from conftest import EXAMPLES, RELEASE, REPO, SOLUTIONS, cells_by_id
from grader import basics, checks
from grader.judge import diagnosis
from grader.sandboxed import observe
from grader.classroom.course import mistake_source, nbgrader_env
from grader.judge.diagnosis import CheckFailed, Finding

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
VALIDATE_WIDTH = 83  # nbgrader validate: Validator.width 90, 4 spaces of indent, lines cut at 87 characters

WRONG_SIGN = mistake_source(EXAMPLES / "mistakes" / "square-wrong-sign.py")
STUB = '''class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        raise NotImplementedError("exercise 'square': write Square.forward")

    @staticmethod
    def backward(ctx, grad_out):
        raise NotImplementedError("exercise 'square': write Square.backward")
'''
WRONG_VJP = '''def vector_jacobian_product(f, x, v):
    g, = torch.autograd.grad(f(x), x, v)
    return -g
'''


def plain(lines: list[str]) -> list[str]:
    """The rendered lines as the student reads them (colours removed, one physical line per item)."""
    return ANSI.sub("", "\n".join(lines)).split("\n")


def words(text: str) -> str:
    return " ".join(text.split())


def grader_source_lines() -> set[str]:
    lines: set[str] = set()
    for path in (REPO / "grader").glob("*.py"):
        lines.update(s for s in (line.strip() for line in path.read_text(encoding="utf-8").splitlines()) if len(s) > 3)
    return lines


def assert_only_the_diagnosis(rendered: list[str], diagnosis: str) -> None:
    """``rendered`` is the headline 'AssertionError: ✗ ...' and the diagnosis, whole, in lines that fit."""
    text = "\n".join(rendered)
    assert rendered[0].startswith("AssertionError: ✗ "), rendered
    assert "grader/" not in text and "checks.py" not in text and "basics.py" not in text, text
    assert "Traceback" not in text and "File " not in text, text
    assert not grader_source_lines() & {line.strip() for line in rendered}, text
    assert words(text) == words("AssertionError: " + diagnosis), text
    assert all(len(line) <= VALIDATE_WIDTH for line in rendered), [line for line in rendered if len(line) > VALIDATE_WIDTH]


def square_from(source: str):
    ns = {"torch": torch}
    exec(source, ns)
    return ns["Square"]


def raised(call, *args, **kwargs) -> CheckFailed:
    with pytest.raises(CheckFailed) as info:
        call(*args, **kwargs)
    return info.value


# --- the exception itself ------------------------------------------------------------------------------------


def test_a_wrong_derivative_renders_as_its_diagnosis_and_nothing_else():
    failure = raised(checks.first_derivatives, "square", square_from(WRONG_SIGN).apply, shapes=[(3, 3)])
    rendered = plain(failure._render_traceback_())
    headline = "AssertionError: ✗ square · first derivatives: the gradient for `x` has the wrong sign."
    assert words(" ".join(rendered[:2])) == words(headline), rendered  # 87 characters: wrapped
    assert rendered[1] == " " * len("AssertionError: ✗ ") + "sign.", rendered  # under the headline's text
    assert any(line.startswith("  hint:     Re-derive") for line in rendered), rendered
    assert_only_the_diagnosis(rendered, failure.finding.render())


def test_str_of_a_failed_check_stays_the_whole_diagnosis():
    failure = raised(checks.first_derivatives, "square", square_from(WRONG_SIGN).apply, shapes=[(3, 3)])
    assert str(failure) == "\n" + failure.finding.render()
    assert isinstance(failure, AssertionError)


def test_an_untouched_stub_renders_as_not_implemented_without_grader_frames():
    failure = raised(checks.forward, "square", square_from(STUB).apply, shapes=[(3, 3)])
    assert failure.finding.mistake == "not_implemented"
    rendered = plain(failure._render_traceback_())
    assert "NotImplementedError" in "\n".join(rendered)
    assert_only_the_diagnosis(rendered, failure.finding.render())


def test_a_basics_check_renders_as_its_diagnosis():
    ns = {"torch": torch}
    exec(WRONG_VJP, ns)
    failure = raised(basics.check_vjp, ns["vector_jacobian_product"])
    rendered = plain(failure._render_traceback_())
    assert rendered[0].startswith("AssertionError: ✗ vjp · vjp: "), rendered
    assert_only_the_diagnosis(rendered, failure.finding.render())


def test_a_grader_error_renders_as_its_diagnosis_without_the_error_behind_it(monkeypatch):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("division by zero in the observer")

    monkeypatch.setattr(observe, "observe", broken)
    failure = raised(checks.forward, "square", square_from(WRONG_SIGN).apply, shapes=[(3, 3)])
    assert failure.finding.mistake == "grader_error"
    rendered = plain(failure._render_traceback_())
    assert_only_the_diagnosis(rendered, failure.finding.render())
    assert "During handling" not in "\n".join(rendered)


def test_long_lines_are_wrapped_whole_to_the_width_nbgrader_validate_prints():
    finding = Finding(exercise="square", check="first derivatives", mistake="raised_error",
                      code="Square.backward, line 12: return grad_out * " + " * ".join(["x"] * 60),
                      probe="x (3, 3) (float64, seed 0)",
                      fields={"error_type": "RuntimeError", "stage": "calling Square.backward",
                              "error": "a_very_long_identifier_" * 8 + " and then " + "more words " * 20})
    rendered = plain(CheckFailed(finding)._render_traceback_())
    assert len(rendered) > 6
    assert rendered[0].startswith("AssertionError: ✗ square · first derivatives: your code raised RuntimeError")
    assert all(len(line) <= VALIDATE_WIDTH for line in rendered), rendered
    # continuation lines keep the label's indent, so the labels stand out
    hint = next(i for i, line in enumerate(rendered) if line.startswith("  hint:"))
    assert all(line.startswith(" " * 12) for line in rendered[hint + 1:]), rendered
    # nothing lost: the long word is cut, never dropped
    assert "".join(words("\n".join(rendered)).split()) == "".join(("AssertionError: " + finding.render()).split())


def test_rendering_never_fails_even_for_a_finding_that_cannot_render(monkeypatch):
    failure = raised(checks.first_derivatives, "square", square_from(WRONG_SIGN).apply, shapes=[(3, 3)])
    monkeypatch.setattr(diagnosis.Finding, "render", lambda self: 1 / 0)
    rendered = plain(failure._render_traceback_())
    assert rendered and rendered[0].startswith("AssertionError"), rendered
    assert "grader/" not in "\n".join(rendered)


# --- an exercise not written yet: reported in the student's notebook, failed everywhere else ---------------------

VJP_STUB = '''def vector_jacobian_product(f, x, v):
    raise NotImplementedError("exercise 'vjp': write vector_jacobian_product")
'''
OWN_NOT_IMPLEMENTED = STUB.replace("exercise 'square': write Square.forward", "TODO")


@pytest.fixture
def in_a_notebook(monkeypatch):
    """As in a student's kernel: IPython is running and nbgrader is not."""
    import IPython

    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)


def test_in_a_notebook_an_untouched_stub_is_reported_not_raised(in_a_notebook, capsys):
    checks.forward("square", square_from(STUB).apply, shapes=[(3, 3)])
    ns = {"torch": torch}
    exec(VJP_STUB, ns)
    basics.check_vjp(ns["vector_jacobian_product"])
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == ("○ square · forward: not done yet: exercise 'square' still raises NotImplementedError "
                          "(Square.forward).")
    assert printed[1].startswith("  This check did not run. Write Square.forward in the answer cell `square`")
    assert printed[2] == ("○ vjp · vjp: not done yet: exercise 'vjp' still raises NotImplementedError "
                          "(vector_jacobian_product).")


@pytest.mark.parametrize("nbgrader", ["validate", "autograde"])
def test_under_nbgrader_an_untouched_stub_fails(in_a_notebook, monkeypatch, nbgrader):
    monkeypatch.setenv("NBGRADER_EXECUTION", nbgrader)
    assert raised(checks.forward, "square", square_from(STUB).apply, shapes=[(3, 3)]).finding.mistake == "not_implemented"
    ns = {"torch": torch}
    exec(VJP_STUB, ns)
    assert raised(basics.check_vjp, ns["vector_jacobian_product"]).finding.mistake == "not_implemented"


def test_outside_a_notebook_an_untouched_stub_fails(monkeypatch):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    assert not diagnosis.reports_unfinished()  # pytest is not an IPython kernel
    assert raised(checks.forward, "square", square_from(STUB).apply, shapes=[(3, 3)]).finding.mistake == "not_implemented"


def test_in_a_notebook_anything_but_the_untouched_stub_still_fails(in_a_notebook):
    """A wrong answer, the student's own NotImplementedError, another exercise's stub: raised as always."""
    assert raised(checks.first_derivatives, "square", square_from(WRONG_SIGN).apply).finding.mistake == "wrong_sign"
    assert raised(checks.forward, "square", square_from(OWN_NOT_IMPLEMENTED).apply).finding.mistake == "not_implemented"
    assert raised(checks.forward, "exp", square_from(STUB).apply).finding.mistake == "not_implemented"


def test_a_block_using_an_untouched_stub_is_skipped_with_a_note(capsys):
    reached = []
    with checks.skip_if_unfinished("square"):
        square_from(STUB).apply(torch.ones(2, requires_grad=True))
        reached.append("after the stub")
    assert not reached
    assert capsys.readouterr().out == ("○ skipped: exercise 'square' is not done yet (Square.forward still raises "
                                       "NotImplementedError). Run this cell again once you have written it.\n")
    for other in (OWN_NOT_IMPLEMENTED, WRONG_SIGN.replace("return -grad_out", "return 1 / 0 * grad_out")):
        with pytest.raises((NotImplementedError, ZeroDivisionError)):
            with checks.skip_if_unfinished("square"):
                square_from(other).apply(torch.ones(2, requires_grad=True)).sum().backward()
    with pytest.raises(ValueError, match="unknown exercise"):
        with checks.skip_if_unfinished("sqaure"):
            pass


# --- in a real kernel, and through nbgrader validate ----------------------------------------------------------


def notebook(*sources: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


@pytest.mark.slow
def test_in_a_kernel_a_failing_self_check_shows_the_diagnosis_and_no_grader_frame(tmp_path):
    from nbclient import NotebookClient

    expected = {
        "wrong sign": raised(checks.first_derivatives, "square", square_from(WRONG_SIGN).apply, shapes=[(3, 3)]),
        "stub": raised(checks.forward, "square", square_from(OWN_NOT_IMPLEMENTED).apply, shapes=[(3, 3)]),
    }
    ns = {"torch": torch}
    exec(WRONG_VJP, ns)
    expected["vjp"] = raised(basics.check_vjp, ns["vector_jacobian_product"])
    nb = notebook(
        "import torch",
        WRONG_SIGN,
        'from grader import checks\nchecks.first_derivatives("square", Square.apply, shapes=[(3, 3)])',
        OWN_NOT_IMPLEMENTED,
        'from grader import checks\nchecks.forward("square", Square.apply, shapes=[(3, 3)])',
        WRONG_VJP,
        "from grader import basics\n\nbasics.check_vjp(vector_jacobian_product)",
        STUB,  # the released stub, untouched: reported, and the notebook goes on
        'from grader import checks\nchecks.forward("square", Square.apply, shapes=[(3, 3)])',
    )
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = {k: [o for o in nb.cells[k].outputs if o.output_type == "error"] for k in (2, 4, 6)}
    for k, name in ((2, "wrong sign"), (4, "stub"), (6, "vjp")):
        assert len(errors[k]) == 1, (name, nb.cells[k].outputs)
        output = errors[k][0]
        rendered = plain(output.traceback)
        assert_only_the_diagnosis(rendered, output.evalue)  # nbgrader keeps evalue: the whole diagnosis
        assert output.evalue.split("\n")[:2] == str(expected[name]).split("\n")[:2]  # the same headline
        assert output.evalue.split("\n")[-1] == str(expected[name]).split("\n")[-1]  # and hint
        assert not any(o.get("name") == "stderr" for o in nb.cells[k].outputs)
    assert [o.output_type for o in nb.cells[8].outputs] == ["stream"], nb.cells[8].outputs
    assert nb.cells[8].outputs[0].text.startswith("○ square · forward: not done yet: exercise 'square' still raises")
    first = plain(errors[2][0].traceback)
    assert words(" ".join(first[:2])) == words(
        "AssertionError: ✗ square · first derivatives: the gradient for `x` has the wrong sign."), first
    assert any("hint:     Re-derive d(x²)/dx" in line for line in first), first


@pytest.mark.slow
def test_nbgrader_validate_fails_every_graded_cell_of_an_untouched_notebook(tmp_path):
    """Run All goes past unfinished exercises in the student's kernel; nbgrader validate still fails them."""
    name = "01_autograd_basics.ipynb"
    nb = nbformat.read(str(RELEASE / name), as_version=4)
    graded = sum(1 for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade"))
    nbformat.write(nb, str(tmp_path / name))
    done = subprocess.run([str(Path(sys.executable).with_name("nbgrader")), "validate", name],
                          cwd=tmp_path, env=nbgrader_env(), capture_output=True, text=True, timeout=300)
    out = done.stdout
    assert f"VALIDATION FAILED ON {graded} CELL(S)" in out, out[-3000:]
    assert "vector_jacobian_product(f, x, v) is not implemented yet" in words(out), out[:3000]
    assert "not done yet" not in out


@pytest.mark.slow
def test_nbgrader_validate_prints_the_whole_diagnosis(tmp_path):
    nb = nbformat.read(str(RELEASE / "03_double_backward.ipynb"), as_version=4)
    for cell in nb.cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "square":
            cell.source = WRONG_SIGN
    nbformat.write(nb, str(tmp_path / "03_double_backward.ipynb"))
    done = subprocess.run([str(Path(sys.executable).with_name("nbgrader")), "validate", "03_double_backward.ipynb"],
                          cwd=tmp_path, env=nbgrader_env(), capture_output=True, text=True, timeout=300)
    out = done.stdout
    failure = raised(checks.first_derivatives, "square", square_from(WRONG_SIGN).apply, shapes=[(3, 3)])
    assert "VALIDATION FAILED" in out, out[-3000:]
    assert words("AssertionError: " + failure.finding.render()) in words(out), out[:6000]
    assert "grader/" not in out and "checks.py" not in out, out[:6000]
    assert not [line for line in out.splitlines() if line.endswith("...")]  # nbgrader's mark of a cut line


@pytest.mark.slow
def test_in_a_kernel_a_self_check_reports_what_autograding_would_refuse_with_its_line(tmp_path):
    """A construct the course's policy refuses (grader.sandboxed.policy) is reported by the self-check, naming the line of
    the answer cell and what the course allows, instead of a full-marks self-check and a zero in autograding."""
    from nbclient import NotebookClient

    answer = ("import gc  # line 1: refused\n\n" + WRONG_SIGN.replace("-grad_out", "grad_out"))
    nb = notebook(
        "import torch",
        answer,
        'from grader import checks\nchecks.first_derivatives("square", Square.apply, shapes=[(3, 3)])',
        "def vector_jacobian_product(f, x, v):\n    y = f(x)\n    return y.__class__",
        "from grader import basics\n\nbasics.check_vjp(vector_jacobian_product)",
    )
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    for k, line, what in ((2, 1, "import gc"), (4, 3, ".__class__")):
        errors = [o for o in nb.cells[k].outputs if o.output_type == "error"]
        assert len(errors) == 1, nb.cells[k].outputs
        text = "\n".join(plain(errors[0].traceback))
        assert text.startswith(f"PolicyError: line {line}: "), text
        assert what in text and "graded cells may use torch, numpy, math" in text, text


@pytest.mark.slow
def test_run_all_with_softplus_unfinished_reaches_the_end_and_blames_no_other_exercise(tmp_path, monkeypatch):
    """Notebook 4 in the student's kernel with everything written but Softplus (its released stub): Restart & Run
    All reaches the end, Softplus's self-checks say it is not done yet, and the hvp self-checks pass,
    naming Softplus's cell as the one that keeps some probes from counting (the penalty, in notebook 5 since
    issue 32, has its own test below). Old code: hvp's first self-check raised
    "hvp(f, x, v) is not implemented yet ... answer cell `hvp`" and stopped Run All there."""
    from nbclient import NotebookClient

    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)  # as in the student's own kernel
    nb = nbformat.read(str(SOLUTIONS / "04_modern_functions.ipynb"), as_version=4)
    released = cells_by_id(RELEASE / "04_modern_functions.ipynb")
    for cell in nb.cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "softplus":
            cell.source = released["softplus"].source
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code), "a cell did not run"
    printed = {}
    for cell in code:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        assert not [o for o in cell.outputs if o.output_type == "error" or o.get("name") == "stderr"], (grade_id,
                                                                                                        cell.outputs)
        printed[grade_id] = "".join(o.get("text", "") for o in cell.outputs)
    for grade_id in ("hvp-double-backward", "hvp-forward-over-reverse"):
        text = printed[grade_id]
        assert text.startswith("✓ ") and "not counted: the probes through your Softplus" in text, (grade_id, text)
        assert "answer cell `softplus`" in text and "answer cell `hvp`" not in text, text
    assert "not done yet: exercise 'softplus' still raises NotImplementedError" in printed["softplus-forward"]


@pytest.mark.slow
def test_notebook_5_with_nothing_pasted_runs_to_the_end_and_its_exercises_keep_their_points(tmp_path, monkeypatch):
    """Notebook 5 in the student's kernel with SortValues and gradient_penalty written and section 0 left as
    released (nothing pasted from notebooks 3 and 4): Run All reaches the end, the capstone says it runs with
    PyTorch's functions, and every self-check passes: the penalty's probe through Softplus waits for the paste
    instead of costing a point (issue 32: the capstone moved to notebook 5, which asks for Softplus to be pasted)."""
    from nbclient import NotebookClient

    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    nb = nbformat.read(str(SOLUTIONS / "05_markers_and_capstone.ipynb"), as_version=4)
    released = cells_by_id(RELEASE / "05_markers_and_capstone.ipynb")
    for cell in nb.cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "capstone-functions":
            cell.source = released["capstone-functions"].source
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    printed, everything = {}, []
    for cell in code:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        assert not [o for o in cell.outputs if o.output_type == "error" or o.get("name") == "stderr"], (grade_id,
                                                                                                        cell.outputs)
        printed[grade_id] = "".join(o.get("text", "") for o in cell.outputs)
        everything.append(printed[grade_id])
    assert "section 0 is not pasted yet" in "".join(everything)
    for grade_id in ("sortvalues-forward", "sortvalues-first-order", "sortvalues-structure", "penalty-value",
                     "penalty-gradient"):
        assert printed[grade_id].startswith("✓ "), (grade_id, printed[grade_id])
