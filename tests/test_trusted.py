"""Trusted grading without nbgrader: test cells are judged outside the sandbox; no sandbox, no grading."""

from __future__ import annotations

import pytest

from conftest import EXAMPLES, RELEASE, SOLUTIONS, cells_by_id
from grader import runner, sandbox
from grader.course import build_submission, mistake_source


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
    result = runner.grade_notebook(tmp_path / "03_double_backward.ipynb", SOLUTIONS / "03_double_backward.ipynb")
    square = {c.grade_id: c.status for c in result.cells if c.grade_id.startswith("square-")}
    assert square == {"square-forward": "passed", "square-first-order": "failed", "square-second-order": "failed",
                      "square-structure": "passed"}
    assert "torch.autograd.gradcheck" in " ".join(result.restored)


def test_test_cells_are_parsed_not_run():
    from grader import testcells

    with pytest.raises(testcells.UnsupportedTestCell, match="only grader imports"):
        testcells.parse("import os\nos.system('rm -rf /')\nchecks.forward('square', Square.apply)", "square-forward")
    cell = cells_by_id(SOLUTIONS / "03_double_backward.ipynb")["sinh-second-order"]
    calls = testcells.parse(cell.source, "sinh-second-order")
    assert [c.hidden for c in calls] == [False, True] and calls[0].entry == "sinh"
