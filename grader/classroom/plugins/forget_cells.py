"""``ForgetUnknownCells``: cells the instructor's notebook does not have are not graded."""

from __future__ import annotations

from typing import Any

from nbgrader.preprocessors import NbGraderPreprocessor

from grader.classroom.plugins import tampering
from grader.classroom.plugins.instructor import instructor_notebook


class ForgetUnknownCells(NbGraderPreprocessor):
    """Sanitizing: a cell whose grade_id the gradebook does not know (renamed or invented in the submission)
    becomes plain code, instead of failing the whole notebook, and is flagged for review
    (``grader.classroom.plugins.tampering``); the real test cell, now missing, is added back by OverwriteCells
    (add_missing_cells), graded as usual and flagged as deleted (or renamed)."""

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        info = resources["nbgrader"]
        known = instructor_notebook(info["db_url"], info["assignment"], info["notebook"]).known()
        for number, cell in enumerate(nb.cells, 1):
            meta = cell.get("metadata", {})
            grade_id = meta.get("nbgrader", {}).get("grade_id")
            if "nbgrader" in meta and grade_id not in known:
                if meta["nbgrader"]:  # (empty: the copy of a duplicated cell, emptied by DeduplicateIds, which said so)
                    self.log.warning("%s/%s/%s: cell %r is not in the gradebook (renamed?): graded as plain code "
                                     "(flagged for review)", info["student"], info["assignment"], info["notebook"],
                                     grade_id)
                    named = isinstance(grade_id, str)
                    tampering.note(info, grade_id if named else f"cell {number}",
                                   "a cell with this grade_id, which the instructor's notebook does not have (a test "
                                   "cell renamed?): graded as plain code" if named else
                                   "a cell with nbgrader metadata but no grade_id: graded as plain code")
                del meta["nbgrader"]
        return nb, resources
