"""One rule, applied where the student runs code (issue 29, item 5).

- ``grader.spec.playground``: which cells the score depends on (one definition, for grading and the kernel);
- grading: a playground cell is not run in the scoring run, keeps its saved outputs, marked; it costs nothing;
- the student's kernel (``grader.sandboxed.kernel_rule``): a self-check refuses what autograding refuses in any cell
  the answer depends on (✗ in the kernel, 0 when autograded: the same points), and a cell that uses what the graded
  rule refuses gets one line when it runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from grader.judge import runner
from grader.spec import playground

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_1 = ROOT / "solutions" / "autograd" / "01_autograd_basics.ipynb"

# a cell the student adds above the accumulate answer, which the answer uses (gc is refused by the policy)
REFUSED_IMPORTS = "import functools, operator\nimport gc"
ANSWER_USING_IT = '''def mean_gradient_over_batches(loss_fn, w, batches):
    w.grad = None
    for batch in batches:
        (loss_fn(w, batch) / len(batches)).backward()
    gc.collect()
    return w.grad.clone()'''
# a playground cell at the end: refused constructs, defining nothing an answer uses
PLAYGROUND = '''import sys
v = torch.tensor([0., 0., 0.], requires_grad=True)
h = torch.Tensor.register_hook(v, lambda grad: grad * 2)
v.backward(torch.tensor([1., 2., 3.]))
print(v.grad, len(sys.modules) > 0)
h.remove()'''
SAVED = [{"output_type": "stream", "name": "stdout", "text": "tensor([2., 4., 6.]) True\n"}]


# --- the definition ---------------------------------------------------------------------------------------------

def test_what_a_cell_binds_and_reads():
    n = playground.names("import functools, operator as op\nfrom torch import nn")
    assert n.binds == {"functools", "op", "nn"}
    n = playground.names("class Square(torch.autograd.Function):\n    def forward(ctx, x):\n        y = x * x\n"
                         "        return functools.reduce(operator.mul, [y])\n")
    assert n.binds == {"Square"} and {"torch", "functools", "operator"} <= n.reads and not {"x", "y"} & n.reads
    assert playground.names("Square.apply = lambda x: x").binds == {"Square"}  # a write through a name changes it
    assert playground.names("torch.manual_seed(0)").binds == {"torch"}  # so does a method called in a statement
    assert playground.names("d['k'] += 1\nfor i, (a, *b) in z: pass").binds >= {"d", "i", "a", "b"}
    assert playground.names("def f():\n    global q\n    q = 1").binds == {"f", "q"}
    assert playground.names("%time z = Square.apply(w)").binds == {"z"}  # a magic's code counts
    assert {"Square", "w"} <= playground.names("%time z = Square.apply(w)").reads
    assert playground.EVERYTHING in playground.names("from math import *").binds
    assert playground.EVERYTHING in playground.names("def (:").binds  # unreadable: may bind anything


def test_a_cell_is_playground_only_if_nothing_scored_reads_what_it_binds():
    cells = ["import torch\nfrom grader import checks",  # 0 instructor
             "import functools, operator",  # 1 student: the answer reads functools -> scored
             "class Square(torch.autograd.Function):\n    def forward(ctx, x):\n"
             "        return functools.reduce(operator.mul, [x, x])",  # 2 answer
             "x = torch.randn(3)\nh = x.register_hook(print)",  # 3 student: the instructor's cell 5 reads x -> scored
             'checks.forward("square", Square.apply)',  # 4 test
             "print(x)",  # 5 instructor
             "x = 5\nimport sys\nsys.modules",  # 6 student, after everything that reads x: playground
             "Square.apply = lambda t: t",  # 7 student: after the test, but the grader reads Square itself: scored
             "from math import *"]  # 8 student: may bind anything: scored
    student = [False, True, False, True, False, False, True, True, True]
    assert playground.playground(cells, student, [0, 2, 4, 5]) == {6}
    # a function defined before a global it reads is still scored with it (the call comes later)
    assert playground.playground(["def f():\n    return q", "q = 1", "check(f)", "q = 2"],
                                 [True, True, False, True], [2]) == {3}
    # the grader reads notebook 4's own Functions by name (the hvp probes): a cell defining Softplus is scored
    assert playground.playground(["class Softplus: pass"], [True], []) == set()


def test_the_kernel_follows_the_cells_as_they_ran():
    """A cell run again or edited replaces its earlier runs; a cell's top level reads what was bound before it ran,
    its functions what is bound when they are called."""
    from grader.sandboxed import kernel_rule

    old_import, new_import = "import functools, gc", "import functools"
    answer = "def f(x):\n    return functools.reduce(g, [x])"
    test = "check(f)"
    history = [old_import, "def g(a, b):\n    return a", answer, new_import, test]
    needed = kernel_rule.dependencies([test, answer], history)
    assert new_import in needed and old_import not in needed and history[1] in needed
    # a top-level read: the binding before the cell ran, not a later one
    assert kernel_rule.dependencies(["check(y)"], ["x = 1", "y = x + 1", "x = 2", "check(y)"]) == \
        ["check(y)", "y = x + 1", "x = 1"]


def test_what_the_run_time_refuses_by_name_is_read_from_the_text():
    from grader.sandboxed import kernel_rule

    found = kernel_rule.runtime_refusals("import sys\nh = m.register_forward_hook(f)\nprint(sys.modules, sys.stderr)")
    assert [line for line, _ in found] == [2, 3] and "sys.modules" in found[1][1]
    assert not kernel_rule.runtime_refusals("class A:\n    def register_forward_hook(self): pass\n"
                                            "A().register_forward_hook()",
                                            frozenset({"register_forward_hook"}))  # the notebook's own method
    # a tensor's register_hook is refused only while the checks drive the student's code: decided when it runs
    assert not kernel_rule.runtime_refusals("h = w.register_hook(f)")
    cell = "class S:\n    pass\n\nv = S()\nh = v.register_forward_hook(print)\nh.remove()"
    assert not kernel_rule._stops_what_follows(cell, 5, {"S"})  # an exploration after the class: S is defined
    assert kernel_rule._stops_what_follows("h = v.register_forward_hook(print)\nclass S: pass", 1, {"S"})  # S never is
    assert kernel_rule._stops_what_follows("def f(w):\n    return w.register_forward_hook(print)", 2, {"f"})  # when called


def _submission(*, above: bool = True, at_end: bool = True) -> nbformat.NotebookNode:
    nb = nbformat.read(str(NOTEBOOK_1), as_version=4)
    found = [k for k, c in enumerate(nb.cells) if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "accumulate"]
    if above:
        nb.cells[found[0]].source = ANSWER_USING_IT
        nb.cells.insert(found[0], nbformat.v4.new_code_cell(REFUSED_IMPORTS))
    if at_end:
        cell = nbformat.v4.new_code_cell(PLAYGROUND)
        cell.outputs = [nbformat.from_dict(o) for o in SAVED]
        nb.cells.append(cell)
    return nb


def test_grading_marks_playground_cells_and_keeps_their_saved_outputs():
    instructor = nbformat.read(str(NOTEBOOK_1), as_version=4)
    cells = runner.cells_to_run(_submission(), runner.instructor_cells(instructor), runner.instructor_sources(instructor))
    by_source = {c.source: c for c in cells}
    assert by_source[PLAYGROUND].playground and by_source[PLAYGROUND].saved[0]["text"] == SAVED[0]["text"]
    assert not by_source[REFUSED_IMPORTS].playground  # the answer reads functools: scored, under the policy
    assert not any(c.playground for c in cells if not c.restricted or c.graded)
    # policy off (tests of the layers beneath it): every cell runs
    assert not any(c.playground for c in runner.cells_to_run(_submission(), runner.instructor_cells(instructor),
                                                              policy=False))


# --- grading and the kernel give the same points ------------------------------------------------------------------

@pytest.mark.slow
def test_a_refused_cell_the_answer_uses_costs_the_same_in_the_kernel_and_in_grading_and_playground_costs_nothing():
    """The refused cell above the answer: autograding gives accumulate 0, and the kernel's self-checks fail with the
    policy's message (before: ✓ in the kernel, 0 in grading). The playground cell at the end (register_hook,
    sys.modules): full marks for the rest, no PolicyError in the feedback, its saved outputs kept under a note."""
    from grader.classroom.plugins.trusted_execute import _write_verdicts
    from grader.isolation.pool import Pool
    from grader.spec.messages import say

    instructor = nbformat.read(str(NOTEBOOK_1), as_version=4)
    nb = _submission()
    cells = runner.cells_to_run(nb, runner.instructor_cells(instructor), runner.instructor_sources(instructor))
    with Pool(hide=[Path(tempfile.mkdtemp(prefix="kernel-rule-"))], workers=1) as pool:
        result = runner.grade_cells("kernel-rule", cells, "solutions", 120, pool=pool)
    points = {c.grade_id: c.points for c in result.cells}
    assert all(points[g] == 0 for g in ("accumulate-values", "accumulate-stale", "accumulate-copy")), result.cells
    assert all(c.points == c.max_points for c in result.cells if not c.grade_id.startswith("accumulate")), result.cells
    shown = dict(result.outputs)[runner.outputs.source_key(PLAYGROUND)]
    assert shown[0]["text"].strip() == "○ " + say("playground_cell") and shown[1]["text"] == SAVED[0]["text"], shown
    _write_verdicts(nb, result)  # the feedback's notebook
    end = [c for c in nb.cells if c.source == PLAYGROUND][0]
    assert [o.get("text") for o in end.outputs] == ["○ " + say("playground_cell") + "\n", SAVED[0]["text"]]
    assert not any("PolicyError" in json.dumps(o) for o in end.outputs)

    kernel = _in_kernel(nb)
    for grade_id in ("accumulate-values", "accumulate-stale", "accumulate-copy"):
        assert kernel["verdicts"][grade_id].startswith("PolicyError: import gc"), kernel["verdicts"]
        assert "import functools, operator" in kernel["verdicts"][grade_id]
    assert all(v == "passed" for g, v in kernel["verdicts"].items() if not g.startswith("accumulate")), kernel
    # the one line, when the student runs a cell the rule refuses (the playground cell too: it runs as usual)
    for source in (REFUSED_IMPORTS, PLAYGROUND):
        lines = [line for line in kernel["printed"][source].splitlines() if line.startswith("⚠")]
        assert len(lines) == 1 and "autograding would refuse line" in lines[0], kernel["printed"][source]
    assert "tensor([2., 4., 6.]) True" in kernel["printed"][PLAYGROUND]
    assert not any(line.startswith("⚠") for line in kernel["printed"][ANSWER_USING_IT].splitlines())


KERNEL = r'''
import contextlib, io, json, os, sys
os.environ["MPLBACKEND"] = "Agg"
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config
config = Config()
config.HistoryManager.enabled = False
shell = InteractiveShell.instance(config=config)  # the kernel first, then the notebook imports the grader
verdicts, printed = {}, {}
for cell in json.load(sys.stdin):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = shell.run_cell(cell["source"], store_history=True)
    printed[cell["source"]] = out.getvalue()
    if cell["grade_id"]:
        error = result.error_before_exec or result.error_in_exec
        verdicts[cell["grade_id"]] = "passed" if error is None else f"{type(error).__name__}: {error}"
print(json.dumps({"verdicts": verdicts, "printed": printed}))
'''


def _in_kernel(nb: nbformat.NotebookNode) -> dict:
    cells = [{"source": c.source, "grade_id": c.metadata.get("nbgrader", {}).get("grade_id", "")
              if c.metadata.get("nbgrader", {}).get("grade") else ""} for c in nb.cells if c.cell_type == "code"]
    done = subprocess.run([sys.executable, "-c", KERNEL], input=json.dumps(cells), capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env={**__import__("os").environ, "NBGRADER_EXECUTION": "validate"})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_playground_note_is_in_the_notebooks_language():
    from grader.spec import messages

    cell = runner.Cell(3, PLAYGROUND, playground=True, saved=SAVED)
    for language in ("en", "zh"):
        with messages.using(language):
            note, saved = runner._saved_outputs(cell, [10**6])
            assert note["text"] == "○ " + messages.say("playground_cell") + "\n" and saved["text"] == SAVED[0]["text"]
    with messages.using("zh"):
        assert "练习单元格" in runner._saved_outputs(cell, [10**6])[0]["text"]


def test_the_course_cells_are_known_without_the_notebooks_beside_the_package(monkeypatch):
    """On a shared server or a laptop the grader is installed without notebooks/ beside it: the course's own set-up
    cell of notebook 2 (it imports gc, which graded code may not) is still the instructor's, never reported as the
    student's (a fresh clone's test_shared: nbgrader validate failed notebook 2's every check on it)."""
    import json

    from grader.sandboxed import kernel_rule

    monkeypatch.setattr(kernel_rule, "instructor_sources", lambda: frozenset())
    notebook = json.loads((ROOT / "notebooks" / "autograd" / "02_custom_function.ipynb").read_text(encoding="utf-8"))
    setup = next("".join(c["source"]) for c in notebook["cells"]
                 if c["cell_type"] == "code" and "import gc" in "".join(c["source"]))
    assert kernel_rule._instructors(setup) and kernel_rule._instructors(setup + "\n")
    assert not kernel_rule._instructors(setup + "\nx = 1")


def test_the_kernel_reads_torchs_and_numpys_allow_lists_as_grading_does():
    """torch's and NumPy's surfaces are allow-lists (grader.sandboxed.policy_surface): a name off the list is refused by
    the kernel's reading of the text as by grading, and the course's names are not."""
    from grader.sandboxed import kernel_rule

    off = kernel_rule.runtime_refusals("import torch\nimport numpy as np\nw = torch.PyTorchFileWriter('x')\n"
                                       "s = x.storage_type()\nnp.info(np.sum)")
    assert [line for line, _ in off] == [3, 4, 5], off
    assert not kernel_rule.runtime_refusals("import torch\nimport numpy as np\ny = torch.einsum('i,i->', x, x)\n"
                                            "z = np.take_along_axis(a, np.argsort(a), 0)\nx.grad = None\n"
                                            "with torch.no_grad():\n    w = torch.sinh(x).detach()")
