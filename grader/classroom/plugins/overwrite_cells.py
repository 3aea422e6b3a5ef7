"""``OverwriteReleasedCells``: the locked and test cells put back from the gradebook, read once per notebook."""

from __future__ import annotations

from typing import Any

from nbgrader.preprocessors import OverwriteCells

from grader.classroom.plugins.instructor import instructor_notebook


class _CellsReadOnce:
    """A Gradebook whose ``find_source_cell`` and ``find_graded_cell`` answer, for one notebook, from the
    gradebook's cells read once per process (``instructor_notebook``): the same values, without two queries per
    cell for every student (OverwriteCells' share of nbgrader's time). Everything else goes to the Gradebook."""

    def __init__(self, gradebook: Any, notebook: "InstructorNotebook", notebook_id: str, assignment: str) -> None:
        self._gradebook, self._notebook, self._key = gradebook, notebook, (notebook_id, assignment)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._gradebook, name)

    def find_source_cell(self, name: str, notebook: str, assignment: str) -> Any:
        from types import SimpleNamespace

        if (notebook, assignment) != self._key:
            return self._gradebook.find_source_cell(name, notebook, assignment)
        found = self._notebook.cells_by_name.get(name)
        if found is None:
            from nbgrader.api import MissingEntry

            raise MissingEntry(f"No such source cell: {assignment}/{notebook}/{name}")
        name, cell_type, source, locked, checksum = found
        return SimpleNamespace(name=name, cell_type=cell_type, source=source, locked=locked, checksum=checksum)

    def find_graded_cell(self, name: str, notebook: str, assignment: str) -> Any:
        from types import SimpleNamespace

        if (notebook, assignment) != self._key:
            return self._gradebook.find_graded_cell(name, notebook, assignment)
        for scores in (self._notebook.points, self._notebook.tasks):
            if name in scores:
                return SimpleNamespace(name=name, max_score=scores[name])
        from nbgrader.api import MissingEntry

        raise MissingEntry(f"No such graded cell: {assignment}/{notebook}/{name}")


class OverwriteReleasedCells(OverwriteCells):
    """nbgrader's OverwriteCells, without its false alarm on test cells with hidden tests.

    Such a cell reaches students without its hidden part, so its checksum never equals the gradebook's (taken
    from the instructor's cell, hidden tests included): nbgrader warns "Attribute 'checksum' for cell … has
    changed!" for every one of them, for every student, honest ones included. Here the warning stays for a
    locked cell the student really changed (it differs from the released cell), and is a debug line when the
    cell is exactly as released. Either way the instructor's cell is put back, as nbgrader does."""

    def preprocess_cell(self, cell: Any, resources: Any, cell_index: int) -> tuple[Any, Any]:
        self._as_released = self._is_as_released(cell, resources)
        if not isinstance(self.gradebook, _CellsReadOnce):  # nbgrader's two queries per cell, from memory
            self.gradebook = _CellsReadOnce(self.gradebook, instructor_notebook(
                resources["nbgrader"]["db_url"], self.assignment_id, self.notebook_id), self.notebook_id,
                self.assignment_id)
        return super().preprocess_cell(cell, resources, cell_index)

    def _is_as_released(self, cell: Any, resources: Any) -> bool:
        from nbgrader.api import MissingEntry

        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id is None:
            return False
        try:
            released = instructor_notebook(resources["nbgrader"]["db_url"], self.assignment_id,
                                           self.notebook_id).released().get(grade_id)
        except MissingEntry:
            return False
        return released is not None and cell.get("source", "") == released

    def add_missing_grade_cells(self, nb: Any, resources: Any) -> tuple[Any, Any]:
        """nbgrader's, saying which student and notebook lost which cell (its own warning, "Missing grade cell X
        encountered", names neither), and warning too for a deleted answer cell, which nbgrader does not put back."""
        import logging

        info = resources["nbgrader"]
        name = f"{info['student']}/{info['assignment']}/{info['notebook']}"
        instructor = instructor_notebook(info["db_url"], info["assignment"], info["notebook"])
        present = {cell.metadata.nbgrader.get("grade_id") for cell in nb.cells
                   if "nbgrader" in cell.get("metadata", {})}
        for grade_id, *_ in instructor.source_cells:
            if grade_id in present or (grade_id not in instructor.points and grade_id not in instructor.solutions):
                continue
            if grade_id in instructor.solutions:
                self.log.warning("%s: answer cell %s was deleted (or renamed) in the submission: %s", name, grade_id,
                                 "the released cell was put back and graded" if grade_id in instructor.points
                                 else "the checks of that exercise run without it (0 points unless its code is "
                                      "elsewhere in the notebook)")
            else:
                self.log.warning("%s: test cell %s was deleted (or renamed) in the submission: the instructor's was "
                                 "put back and graded", name, grade_id)

        class SaidAbove(logging.Filter):
            def filter(self, record: logging.LogRecord) -> bool:
                return not str(record.msg).startswith("Missing grade cell ")

        said, logger = SaidAbove(), self.log if isinstance(self.log, logging.Logger) else self.log.logger
        logger.addFilter(said)
        try:
            nb, resources = super().add_missing_grade_cells(nb, resources)
        finally:
            logger.removeFilter(said)
        # nbgrader builds the cell it puts back without an id (nbformat 4.5 wants one: MissingIDFieldWarning in the
        # instructor's terminal): its grade_id, as our notebooks' cells have, or that with a suffix if taken
        taken = {cell.get("id") for cell in nb.cells}
        for cell in nb.cells:
            if not cell.get("id"):
                base = str(cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or "restored")
                cell["id"] = next(c for c in (base, *(f"{base}-{n}" for n in range(2, 10**6))) if c not in taken)
                taken.add(cell["id"])
        return nb, resources

    def report_change(self, name: str, attr: str, old: Any, new: Any) -> None:
        if attr == "checksum" and getattr(self, "_as_released", False):
            self.log.debug("cell %s is as released (its hidden tests make the checksums differ): restored", name)
            return
        super().report_change(name, attr, old, new)
