"""``ForgetUnknownCells``: cells the instructor's notebook does not have are not graded."""

from __future__ import annotations

from typing import Any

from nbgrader.preprocessors import NbGraderPreprocessor

from grader.classroom.plugins.instructor import instructor_notebook


class ForgetUnknownCells(NbGraderPreprocessor):
    """Sanitizing: a cell whose grade_id the gradebook does not know (renamed or invented in the submission)
    becomes plain code, instead of failing the whole notebook; the real test cell, now missing, is added
    back by OverwriteCells (add_missing_cells) and graded as usual."""

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        info = resources["nbgrader"]
        known = instructor_notebook(info["db_url"], info["assignment"], info["notebook"]).known()
        for cell in nb.cells:
            meta = cell.get("metadata", {})
            grade_id = meta.get("nbgrader", {}).get("grade_id")
            if "nbgrader" in meta and grade_id not in known:
                self.log.warning("%s/%s/%s: cell %r is not in the gradebook (renamed?): graded as plain code",
                                 info["student"], info["assignment"], info["notebook"], grade_id)
                del meta["nbgrader"]
        return nb, resources
