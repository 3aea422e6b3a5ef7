"""The course's own notebooks under the policy, as a student who touched every cell would hand them in: every
answer and playground cell edited (so that none is byte-identical to the instructor's and each runs under
grader.sandboxed.policy), graded in the sandbox as nbgrader's plugin does. Full marks, nothing flagged, and the playground
cells that ran for the instructor run for the student too (but the two that demonstrate gc and globals()).

The same grading with the policy off is benchmarks/policy_cost.py's baseline."""

from __future__ import annotations

import tempfile
from pathlib import Path

import nbformat
import pytest

from grader.judge import runner

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted((ROOT / "solutions" / "autograd").glob("*.ipynb"))
# Playground cells that show Python's internals on purpose (the instructor's demos): refused once a student edits them.
# (Notebook 6's labs call C through ctypes and register a custom operator, which graded code may not use: the labs
# score nothing, so grading runs none of their cells, edited or not.)
DEMOS_OF_INTERNALS = ("gc.disable()", "globals()")


def _edited(path: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and not cell.metadata.get("nbgrader", {}).get("locked"):
            cell.source += "\n# edited by the student"
    return nb


@pytest.mark.slow
def test_every_cell_edited_the_solutions_score_full_marks_under_the_policy():
    from grader.isolation.pool import Pool

    assert len(SOLUTIONS) == 6, SOLUTIONS
    with Pool(hide=[Path(tempfile.mkdtemp(prefix="policy-notebooks-"))], workers=1) as pool:
        for path in SOLUTIONS:
            nb = _edited(path)
            cells = runner.cells_to_run(nb, runner.instructor_cells(nbformat.read(str(path), as_version=4)))
            edited = [c for c in cells if c.restricted]
            if not any(c.graded for c in cells):  # the labs: nothing scored, nothing run, nothing refused
                result = runner.grade_cells(path.name, cells, "solutions", 120, pool=pool)
                assert (result.score, result.max_score, result.problem, result.flags) == (0, 0, "", []), result
                assert not [o for _, shown in result.outputs for o in shown if o.get("output_type") == "error"]
                continue
            assert len(edited) > 10, f"{path.name}: only {len(edited)} cells run under the policy"
            result = runner.grade_cells(path.name, cells, "solutions", 120, pool=pool)
            assert (result.score, result.problem, result.flags) == (result.max_score, "", []), (path.name, result)
            errors = {key: [o for o in shown if o.get("output_type") == "error"] for key, shown in result.outputs}
            for cell in edited:
                failed = errors.get(runner.outputs.source_key(cell.source))
                if failed and not any(demo in cell.source for demo in DEMOS_OF_INTERNALS):
                    pytest.fail(f"{path.name}: an edited playground cell fails under the policy: {failed[0]}\n"
                                f"{cell.source[:500]}")
