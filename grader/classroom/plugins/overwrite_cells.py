"""``OverwriteReleasedCells``: the locked and test cells put back from the gradebook, read once per notebook; what a
student changed in them said and flagged for review."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nbgrader.preprocessors import OverwriteCells

from grader.classroom.plugins import tampering
from grader.classroom.plugins.instructor import instructor_notebook
from grader.classroom.plugins.tampering import same_but_trailing_whitespace


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


_RELEASED: dict[Path, tuple[float, dict[str, str]]] = {}


def released_cells(path: Path) -> dict[str, str]:
    """{grade_id: source} of a released student notebook on disk, read again only when it changes ({} when it is
    not there or not readable)."""
    import nbformat

    try:
        stamp = path.stat().st_mtime
    except OSError:
        return {}
    known = _RELEASED.get(path)
    if known is None or known[0] != stamp:
        try:
            nb = nbformat.read(str(path), as_version=4)
        except Exception:  # (a broken release is make release's to report; here: no translation known)
            return {}
        known = (stamp, {c.metadata["nbgrader"]["grade_id"]: c.source for c in nb.cells
                         if c.get("metadata", {}).get("nbgrader", {}).get("grade_id")})
        _RELEASED[path] = known
    return known[1]


class OverwriteReleasedCells(OverwriteCells):
    """nbgrader's OverwriteCells, without its false alarm on test cells with hidden tests, and saying what a student
    changed in the instructor's cells: which student, notebook and cell, in plain words, flagged for review
    (``grader.classroom.plugins.tampering``: the class report, reports/flags.csv).

    A test cell reaches students without its hidden part, so its checksum never equals the gradebook's (taken
    from the instructor's cell, hidden tests included): nbgrader warns "Attribute 'checksum' for cell … has
    changed!" for every one of them, for every student, honest ones included. Here a locked cell as released
    (trailing whitespace aside: an editor's doing) is a debug line; one the student really changed is a warning
    and a flag. So are changed points, a test or locked cell turned into another type or unlocked,
    a cell's nbgrader flags changed (``grade`` removed from a test cell: nbgrader then failed the whole
    notebook on "Inconsistent checksums"; here they are put back and it is graded), and a deleted test, answer or
    locked cell. Either way the instructor's cell is put back, as nbgrader does."""

    def preprocess(self, nb: Any, resources: Any) -> tuple[Any, Any]:
        self._info = resources["nbgrader"]  # (report_change has no resources: which submission a change is in)
        self._translated = self._release_in_its_language(nb)
        return super().preprocess(nb, resources)

    def _release_in_its_language(self, nb: Any) -> dict[str, str]:
        """{grade_id: source} of the released notebook in the submission's own language, when that is another
        edition of the course than the assignment graded (Chinese notebooks handed in under autograd/): their
        locked cells are the translation's, not edited ({} otherwise, or when that release is not on disk)."""
        from grader.classroom.folders import ASSIGNMENTS, language_of
        from grader.spec.messages import language_of as notebook_language

        if self._info["assignment"] not in ASSIGNMENTS:
            return {}
        language = notebook_language(nb)
        edition = next((a for a in ASSIGNMENTS if language_of(a) == language), None)
        if edition is None or edition == self._info["assignment"]:
            return {}
        from grader.classroom.folders import REPO

        owner, coursedir = self.parent, None  # (the exporter's parent, nbgrader's converter, has the course folder)
        while owner is not None and coursedir is None:
            coursedir, owner = getattr(owner, "coursedir", None), getattr(owner, "parent", None)
        name = f"{self._info['notebook']}.ipynb"
        path = Path(coursedir.format_path(coursedir.release_directory, ".", edition)) / name if coursedir else None
        if path is None or not path.is_file():  # (a course without its release: the repository's, make release's)
            path = REPO / "notebooks" / edition / name
        return released_cells(path)

    def preprocess_cell(self, cell: Any, resources: Any, cell_index: int) -> tuple[Any, Any]:
        self._as_released = self._is_as_released(cell, resources)
        if not isinstance(self.gradebook, _CellsReadOnce):  # nbgrader's two queries per cell, from memory
            self.gradebook = _CellsReadOnce(self.gradebook, instructor_notebook(
                resources["nbgrader"]["db_url"], self.assignment_id, self.notebook_id), self.notebook_id,
                self.assignment_id)
        self._put_back_kind(cell)
        return super().preprocess_cell(cell, resources, cell_index)

    def _instructor(self) -> Any:
        return instructor_notebook(self._info["db_url"], self.assignment_id, self.notebook_id)

    def _name(self) -> str:
        return f"{self._info['student']}/{self.assignment_id}/{self.notebook_id}"

    def _kind(self, grade_id: str) -> str:
        """"test cell", "answer cell" or "locked cell": what the instructor's cell of that grade_id is."""
        instructor = self._instructor()
        if grade_id in instructor.solutions:
            return "answer cell"
        return "test cell" if grade_id in instructor.points else "locked cell"

    def _put_back_kind(self, cell: Any) -> None:
        """A cell whose nbgrader flags ``grade`` and ``solution`` differ from the instructor's cell of its grade_id
        gets the instructor's (and its points), flagged: nbgrader would compare it as another kind of cell, and
        fail the notebook on a checksum it cannot make consistent."""
        meta = cell.get("metadata", {}).get("nbgrader", {})
        grade_id = meta.get("grade_id")
        instructor = self._instructor()
        if grade_id is None or grade_id not in instructor.cells_by_name or grade_id in instructor.tasks:
            return
        should = {"grade": grade_id in instructor.points, "solution": grade_id in instructor.solutions}
        changed = {flag: value for flag, value in should.items() if bool(meta.get(flag, False)) != value}
        if not changed:
            return
        for flag, value in changed.items():
            meta[flag] = value
        if should["grade"] and "points" not in meta:
            meta["points"] = instructor.points[grade_id]
        said = ", ".join(f"{flag} {str(not value).lower()} instead of {str(value).lower()}"
                         for flag, value in changed.items())
        self._changed(grade_id, f"had its nbgrader flags changed in its metadata ({said}): put back as the "
                                "instructor's", flag=True)

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
        if released is not None and same_but_trailing_whitespace(cell.get("source", ""), released):
            return True
        translated = getattr(self, "_translated", {}).get(grade_id)
        return translated is not None and same_but_trailing_whitespace(cell.get("source", ""), translated)

    def _changed(self, grade_id: str, what: str, flag: bool) -> None:
        """One warning naming student, notebook and cell ("ann/autograd/01_autograd_basics: test cell vjp-values
        ``what``"); with ``flag``, flagged for review too ("test cell ``what``", for that cell)."""
        kind = self._kind(grade_id)
        if flag:
            tampering.note(self._info, grade_id, f"{kind} {what}")
        self.log.warning("%s: %s %s %s%s", self._name(), kind, grade_id, what, " (flagged for review)" if flag else "")

    def add_missing_grade_cells(self, nb: Any, resources: Any) -> tuple[Any, Any]:
        """nbgrader's, saying which student and notebook lost which cell (its own warning, "Missing grade cell X
        encountered", names neither), and warning too for a deleted answer cell, which nbgrader does not put back,
        and a deleted locked cell, which nobody puts back; each flagged for review."""
        import logging

        info = resources["nbgrader"]
        instructor = instructor_notebook(info["db_url"], info["assignment"], info["notebook"])
        present = {cell.metadata.nbgrader.get("grade_id") for cell in nb.cells
                   if "nbgrader" in cell.get("metadata", {})}
        for grade_id, _, _, locked, _ in instructor.source_cells:
            if grade_id in present or grade_id in instructor.tasks:
                continue
            gone = "was deleted (or renamed) in the submission: "
            if grade_id in instructor.solutions:
                self._changed(grade_id, gone + ("the released cell was put back and graded" if grade_id in
                                                instructor.points else "the checks of that exercise run without it "
                                                "(0 points unless its code is elsewhere in the notebook)"), flag=True)
            elif grade_id in instructor.points:
                self._changed(grade_id, gone + "the instructor's was put back and graded", flag=True)
            elif locked:
                self._changed(grade_id, gone + "the notebook was graded without it", flag=True)

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
        """nbgrader found ``attr`` of the cell ``name`` changed (``old``: the instructor's, ``new``: the
        submission's) and puts back the instructor's: said in plain words, and flagged unless an honest student's
        notebook shows it too."""
        if attr == "checksum" and getattr(self, "_as_released", False):
            self.log.debug("cell %s is as released (its hidden tests make the checksums differ): restored", name)
            return
        test = self._kind(name) == "test cell"
        if attr == "checksum":
            self._changed(name, "was edited: it differs from the released cell; the instructor's was put back"
                                + (" and graded" if test else ""), flag=True)
        elif attr == "points":
            self._changed(name, f"had its points changed to {new:g} in its metadata (it is worth {old:g}): the "
                                f"instructor's {old:g} were kept", flag=True)
        elif attr == "cell_type":  # (an answer cell is the student's to write: its type can slip, a key press)
            self._changed(name, f"was turned into a {new} cell: put back as a {old} cell",
                          flag=self._kind(name) != "answer cell")
        elif attr == "locked":  # (a student's own lock on a cell unlocked in the release changes nothing)
            self._changed(name, f"was {'unlocked' if old else 'locked'} in its metadata: "
                                f"{'locked again' if old else 'unlocked again, as released'}", flag=bool(old))
        else:
            self._changed(name, f"had its {attr} changed (the instructor's: {old}, the submission's: {new}): put back",
                          flag=True)
