"""nbgrader preprocessors of the course, named in ``nbgrader_config.py``.

``NamedStubs`` replaces each ``### BEGIN SOLUTION`` region with a stub that names
the exercise and the function to write, so a student who runs an unfinished
cell reads ``NotImplementedError: exercise 'square': write Square.backward``.
A region may declare its own stub instead, in ``### STUB`` lines (see ``NamedStubs``).
"""

from __future__ import annotations

import re

import nbformat
from nbformat import NotebookNode
from nbgrader.preprocessors import ClearSolutions, OverwriteCells, SaveAutoGrades

_DEF = re.compile(r"^(\s*)(?:async\s+)?def\s+(\w+)")
_CLASS = re.compile(r"^(\s*)class\s+(\w+)")


def enclosing_name(lines: list[str], indent: str) -> str:
    """'Square.backward' for a region inside that method, from the lines above the region."""
    names: list[str] = []
    depth = len(indent)
    for line in reversed(lines):
        match = _DEF.match(line) or _CLASS.match(line)
        if match and len(match.group(1)) < depth:
            names.append(match.group(2))
            depth = len(match.group(1))
    return ".".join(reversed(names))


class NamedStubs(ClearSolutions):
    """ClearSolutions whose Python stub says which exercise and which function to write.

    A solution region may declare the stub students get instead, one line each, in lines
    ``### STUB <code>`` inside the region: released, the region becomes those lines (marker removed,
    indentation kept). For a cell whose stub must run rather than raise, such as a cell where students
    paste their answers from an earlier notebook::

        ### BEGIN SOLUTION
        ### STUB Square = None  # paste your Square here
        class Square(torch.autograd.Function): ...
        ### END SOLUTION
    """

    stub_template = '# YOUR CODE HERE\nraise NotImplementedError("exercise {exercise!r}: write {target}")'
    stub_marker = "### STUB"

    def _replace_solution_region(self, cell: NotebookNode, language: str) -> bool:
        if cell.cell_type != "code" or language != "python":
            return super()._replace_solution_region(cell, language)
        exercise = cell.metadata.get("nbgrader", {}).get("grade_id", "?")
        new_lines: list[str] = []
        declared: list[str] = []  # the region's own stub, from its ### STUB lines
        in_solution = replaced = False
        for line in cell.source.split("\n"):
            if self.begin_solution_delimeter in line:
                if in_solution:
                    raise RuntimeError(f"nested BEGIN SOLUTION in cell {exercise!r}")
                in_solution = replaced = True
                indent = re.match(r"\s*", line).group(0)  # type: ignore[union-attr]
                target = enclosing_name(new_lines, indent) or "this part"
                declared = []
            elif self.end_solution_delimeter in line:
                in_solution = False
                stub = declared or [indent + stub_line for stub_line in
                                    self.stub_template.format(exercise=exercise, target=target).split("\n")]
                new_lines.extend(stub)
            elif in_solution and line.lstrip().startswith(self.stub_marker):
                code = line.lstrip()[len(self.stub_marker):].removeprefix(" ")
                declared.append(line[: len(line) - len(line.lstrip())] + code)
            elif not in_solution:
                new_lines.append(line)
        if in_solution:
            raise RuntimeError(f"no END SOLUTION in cell {exercise!r}")
        cell.source = "\n".join(new_lines)
        return replaced


# --- what nbgrader says: expected warnings explained once, at their source ------------------------------------


def silence_harmless_warnings() -> None:
    """Called from nbgrader_config.py, in nbgrader's process.

    nbgrader 0.9.6's ``Gradebook.add_submission`` builds a new submission (``SubmittedAssignment``, its
    ``SubmittedNotebook``s, ``Grade``s and ``Comment``s) linked to objects already in the database, and reads
    ``submission.assignment.notebooks`` (and each notebook's cells) before it calls ``db.add(submission)``.
    SQLAlchemy 2 no longer cascades the new objects into the session through those links, so the autoflush
    that the read triggers warns "Object of type <SubmittedAssignment> not in session, add operation along
    'Assignment.submissions' will not proceed" (three such warnings per student). The next statement adds the
    submission, and with it every object created in the loop (save-update cascade), and commits: nothing is
    lost, every grade row exists (the gradebook's scores and feedback are read from them). Only these warnings,
    raised from nbgrader.api, are silenced; any other SQLAlchemy warning still reaches the log.
    """
    import warnings

    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings(
        "ignore", category=SAWarning, module=r"nbgrader\.api\Z",
        message=r"Object of type <(SubmittedAssignment|SubmittedNotebook|Grade|Comment)> not in session, "
                r"add operation along '[\w.]+' will not proceed")


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


class SaveAutoGradesAtOnce(SaveAutoGrades):
    """nbgrader's SaveAutoGrades, writing the same rows in one transaction: the submission's grades and comments
    are read in one query each and committed once, where nbgrader queries and commits once per cell (on SQLite a
    commit is a write to disk: about thirty per notebook, in nbgrader's one serial process). The cells are
    nbgrader's own _add_score and _add_comment, given a Gradebook that finds those rows (``_RowsReadOnce``)."""

    def preprocess(self, nb: Any, resources: Any) -> tuple[Any, Any]:
        from nbgrader.api import BaseCell, Comment, Grade, Gradebook

        info = resources["nbgrader"]
        self.notebook_id, self.assignment_id = info["notebook"], info["assignment"]
        self.student_id, self.db_url = info["student"], info["db_url"]
        gradebook = Gradebook(self.db_url)
        with gradebook:
            db = gradebook.db
            submission = gradebook.find_submission_notebook(self.notebook_id, self.assignment_id, self.student_id)
            grades = dict((name, grade) for grade, name in db.query(Grade, BaseCell.name).join(
                BaseCell, BaseCell.id == Grade.cell_id).filter(Grade.notebook_id == submission.id))
            comments = dict((name, comment) for comment, name in db.query(Comment, BaseCell.name).join(
                BaseCell, BaseCell.id == Comment.cell_id).filter(Comment.notebook_id == submission.id))
            self.gradebook = _RowsReadOnce(gradebook, grades, comments)
            try:
                nb, resources = super(SaveAutoGrades, self).preprocess(nb, resources)  # the cells, as nbgrader's
                db.commit()
            finally:
                self.gradebook = gradebook  # (the rows read go with the façade)
        return nb, resources


class _RowsReadOnce:
    """The Gradebook for SaveAutoGradesAtOnce's cells: find_grade and find_comment from the rows read at once (a
    name not among them goes to the Gradebook, which says MissingEntry as for nbgrader), and a session whose
    commit() only flushes, leaving the one commit to the end of the notebook. Everything else is the Gradebook's."""

    def __init__(self, gradebook: Any, grades: dict[str, Any], comments: dict[str, Any]) -> None:
        self._gradebook, self._grades, self._comments = gradebook, grades, comments
        self.db = _DeferredCommit(gradebook.db)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._gradebook, name)

    def find_grade(self, name: str, notebook: str, assignment: str, student: str) -> Any:
        found = self._grades.get(name)
        return found if found is not None else self._gradebook.find_grade(name, notebook, assignment, student)

    def find_comment(self, name: str, notebook: str, assignment: str, student: str) -> Any:
        found = self._comments.get(name)
        return found if found is not None else self._gradebook.find_comment(name, notebook, assignment, student)


class _DeferredCommit:
    """A session whose commit() waits for SaveAutoGradesAtOnce's one commit; everything else is the session's."""

    def __init__(self, session: Any) -> None:
        self._session = session

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def commit(self) -> None:
        self._session.flush()  # (the rows are written in the transaction, as nbgrader's commit would)


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
            return super().add_missing_grade_cells(nb, resources)
        finally:
            logger.removeFilter(said)

    def report_change(self, name: str, attr: str, old: Any, new: Any) -> None:
        if attr == "checksum" and getattr(self, "_as_released", False):
            self.log.debug("cell %s is as released (its hidden tests make the checksums differ): restored", name)
            return
        super().report_change(name, attr, old, new)


# --- trusted autograding -------------------------------------------------------------------------------

import atexit  # noqa: E402
import copy  # noqa: E402
import glob  # noqa: E402
import os  # noqa: E402
import threading  # noqa: E402
from concurrent.futures import Future, ThreadPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from nbconvert.exporters import NotebookExporter  # noqa: E402
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook  # noqa: E402
from nbgrader.preprocessors import NbGraderPreprocessor  # noqa: E402
from traitlets import Bool, Float, Int, List, Type, Unicode  # noqa: E402


from grader.classroom.report import RESULTS_DIR  # noqa: E402 (<course root>/grader_results/<assignment>/<student>/<notebook>.json)
MAX_NOTEBOOK_BYTES = 100 * 2**20  # a submission larger than this is not read


# --- the instructor's notebooks, as the gradebook holds them ----------------------------------------------------


class InstructorNotebook:
    """One notebook of an assignment as the gradebook holds it (its cells, points, kernelspec): read once per
    process, since it does not change while a class is autograded (every plugin used to query the gradebook for it
    again, for every student: a quarter of nbgrader's own time per notebook)."""

    def __init__(self, notebook: Any) -> None:
        import json

        self.points = {g.name: g.max_score for g in notebook.grade_cells}
        self.code_grades = {g.name for g in notebook.grade_cells if g.cell_type == "code"}
        self.solutions = {c.name for c in notebook.solution_cells}
        self.tasks = {t.name: t.max_score for t in notebook.task_cells}
        self.kernelspec = json.loads(notebook.kernelspec) if notebook.kernelspec else None
        # (name, cell type, source, locked, checksum), in the gradebook's order
        self.source_cells = [(c.name, c.cell_type, c.source, bool(c.locked), c.checksum) for c in notebook.source_cells]
        self.cells_by_name = {cell[0]: cell for cell in self.source_cells}
        self._released: dict[str, str] | None = None

    def known(self) -> set[str]:
        return set(self.cells_by_name)

    def released(self) -> dict[str, str]:
        """grade_id -> the source of each code cell as students received it (hidden tests removed)."""
        if self._released is None:
            from nbgrader.preprocessors import ClearHiddenTests

            clear = ClearHiddenTests()
            released = {}
            for name, cell_type, source, *_ in self.source_cells:
                cell = nbformat.v4.new_code_cell(source)
                clear._remove_hidden_test_region(cell)
                released[name] = cell.source
            self._released = released
        return self._released


_INSTRUCTOR: dict[tuple[str, str, str], InstructorNotebook] = {}


def instructor_notebook(db_url: str, assignment: str, notebook_id: str) -> InstructorNotebook:
    """The gradebook's ``notebook_id`` of ``assignment`` (nbgrader's MissingEntry when it has none), read once."""
    key = (str(db_url), assignment, notebook_id)
    found = _INSTRUCTOR.get(key)
    if found is None:
        from nbgrader.api import Gradebook

        with Gradebook(db_url) as gb:
            found = InstructorNotebook(gb.find_notebook(notebook_id, assignment))
        _INSTRUCTOR[key] = found
    return found


_SOURCES: dict[tuple[Path, ...], tuple[tuple[float, ...], frozenset[str]]] = {}


def instructor_sources(paths: tuple[Path, ...]) -> frozenset[str]:
    """``runner.instructor_sources`` of the notebooks in ``paths`` that exist, read again only when one changes."""
    from grader.judge import runner

    stamps = tuple(p.stat().st_mtime if p.exists() else -1.0 for p in paths)
    known = _SOURCES.get(paths)
    if known is not None and known[0] == stamps:
        return known[1]
    sources = runner.instructor_sources(*(nbformat.read(str(p), as_version=4) for p in paths if p.exists()))
    _SOURCES[paths] = (stamps, sources)
    return sources


# --- submissions nbgrader cannot read -------------------------------------------------------------------


class UnreadableSubmission(Exception):
    """The file is not a notebook nbgrader can read; str() says why, in a few words."""


def read_submission(path: str | Path) -> Any:
    """The notebook in ``path`` (nbformat 4), or UnreadableSubmission saying why it is not one."""
    import json
    import warnings

    try:
        with open(path, "rb") as f:
            data = f.read(MAX_NOTEBOOK_BYTES + 1)
    except OSError as exc:
        raise UnreadableSubmission(f"it cannot be opened ({exc.strerror or exc})") from None
    if not data.strip():
        raise UnreadableSubmission("the file is empty")
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise UnreadableSubmission(f"it is larger than {MAX_NOTEBOOK_BYTES // 2**20} MB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UnreadableSubmission("it is binary data, not text") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        cut = exc.pos >= len(text.rstrip()) - 1
        raise UnreadableSubmission(f"it is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}"
                                   + (": the file ends too early, truncated?)" if cut else ")")) from None
    except RecursionError:
        raise UnreadableSubmission("it is not valid JSON (nested too deeply)") from None
    if not isinstance(raw, dict):
        raise UnreadableSubmission(f"it holds a JSON {_json_type(raw)}, not a notebook")
    version = raw.get("nbformat")
    if not isinstance(version, int) or isinstance(version, bool):
        raise UnreadableSubmission("it has no notebook format version ('nbformat'): not a notebook")
    if version not in (3, 4):
        raise UnreadableSubmission(f"its notebook format version is {version}; only 3 and 4 can be read")
    if version == 3:  # an old notebook: its cells are in worksheets
        worksheets = raw.get("worksheets")
        if not isinstance(worksheets, list) or not all(isinstance(w, dict) for w in worksheets):
            raise UnreadableSubmission("its 'worksheets' (notebook format 3) is "
                                       + ("missing" if worksheets is None else "a JSON " + _json_type(worksheets))
                                       + ", not a list of worksheets")
        cells = [cell for w in worksheets for cell in (w.get("cells") if isinstance(w.get("cells"), list) else [None])]
        kinds: tuple[str, ...] = ("code", "markdown", "raw", "heading")
    else:
        cells = raw.get("cells")
        if not isinstance(cells, list):
            raise UnreadableSubmission(f"its 'cells' is {'missing' if cells is None else 'a JSON ' + _json_type(cells)}, "
                                       "not a list of cells")
        kinds = ("code", "markdown", "raw")
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") not in kinds:
            raise UnreadableSubmission(f"its cell {number} is not a notebook cell")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # missing or duplicate cell ids: repaired, as Jupyter would
            notebook = nbformat.convert(_to_notebook(raw, version), 4)
            nbformat.validate(notebook)
    except Exception as exc:  # ValidationError, NBFormatError, or nbformat tripping over garbage
        detail = " ".join(str(getattr(exc, "message", "") or exc).split())
        where = "/".join(str(p) for p in getattr(exc, "absolute_path", []) or [])
        raise UnreadableSubmission("it is not a valid notebook (" + (f"at {where}: " if where else "")
                                   + (detail[:150] + "..." if len(detail) > 150 else detail) + ")") from None
    return notebook


def _to_notebook(raw: dict[str, Any], version: int) -> Any:
    """nbformat.reader.reads on JSON already parsed (the file is parsed once, not twice)."""
    from nbformat import ValidationError, versions

    try:
        return versions[version].to_notebook_json(raw, minor=raw.get("nbformat_minor", 0))
    except AttributeError as e:  # (nbformat's own words)
        raise ValidationError(f"The notebook is invalid and is missing an expected key: {e}") from None


def _json_type(value: Any) -> str:
    names = {list: "list", str: "string", bool: "boolean", int: "number", float: "number", dict: "object"}
    return names.get(type(value), "null")


def placeholder_notebook(db_url: str, assignment: str, notebook_id: str, reason: str) -> Any:
    """Stands for an unreadable submission: the instructor's cells as released (from the gradebook), after a
    notice saying why; nbgrader then puts back and records every test cell, each failed with ``reason``."""
    from grader.spec.messages import message, say

    cells = [new_markdown_cell(say("unreadable_notice", reason=reason) + " " + message("unreadable_notice").hint)]
    notebook = instructor_notebook(db_url, assignment, notebook_id)
    points, tasks = notebook.points, notebook.tasks
    for name, cell_type, source, locked, checksum in notebook.source_cells:
        meta: dict[str, Any] = {"grade_id": name, "grade": name in points, "solution": name in notebook.solutions,
                                "locked": locked, "schema_version": 3}
        if name in points:
            meta["points"] = points[name]
        if name in tasks:
            meta.update(task=True, points=tasks[name])
        if checksum:
            meta["checksum"] = checksum
        make = new_code_cell if cell_type == "code" else new_markdown_cell
        cells.append(make(source, metadata={"nbgrader": meta}))
    nb = new_notebook(cells=cells)
    if notebook.kernelspec:
        nb.metadata["kernelspec"] = notebook.kernelspec
    return nb


class SubmissionExporter(NotebookExporter):
    """nbgrader's exporter for autograding (``c.Autograde.exporter_class``), with two duties nbgrader has no
    other hook for:

    * when it is created (before nbgrader looks at any student), the grading environment starts: a sandbox
      worker that never becomes ready stops the run there, with the cause, before anything is recorded; then
      the class starts streaming into the pool, while nbgrader prepares its first student;
    * a submission that is not a readable notebook becomes a placeholder (``placeholder_notebook``) that
      TrustedExecute grades 0 with the reason, instead of an exception that nbgrader would pin on the student
      being processed (and, through the class graded ahead, on another one).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        converter = self.parent
        pipeline = [p if isinstance(p, str) else f"{p.__module__}.{p.__name__}"
                    for p in getattr(converter, "autograde_preprocessors", [])]
        if getattr(converter, "coursedir", None) is not None and f"{__name__}.TrustedExecute" in pipeline:
            from nbgrader.converters.base import NbGraderException

            from grader.judge import runner
            from grader.isolation import sandbox

            plugin = TrustedExecute(parent=self)
            coursedir = converter.coursedir
            try:
                hide = plugin._hide(coursedir.db_url)
                _CLASSROOM.start(plugin, hide)
                # the class streams into the pool from now on, while nbgrader prepares its first student (an
                # assignment named by a pattern waits for nbgrader's first notebook, which names it)
                if plugin.parallel and coursedir.assignment_id and not glob.has_magic(coursedir.assignment_id):
                    _CLASSROOM.feed(plugin, {"assignment": coursedir.assignment_id, "db_url": coursedir.db_url}, hide)
            except (sandbox.SetupError, runner.SandboxRefused) as exc:
                self.log.error("%s %s", *plugin.setup_problem("setup_failed", cause=_one_line(exc)))
                raise NbGraderException(str(exc)) from None  # nbgrader exits 1; nothing was recorded

    def _relative(self, text: str) -> str:
        from grader.judge.outputs import course_relative

        root = getattr(getattr(self.parent, "coursedir", None), "root", None)
        return course_relative(text, Path(root).resolve() if root else None)

    def from_notebook_node(self, nb: Any, resources: Any = None, **kw: Any) -> tuple[str, Any]:
        """NotebookExporter's, without validating the text it writes: nbformat.writes only logs what it finds,
        and writes all the same; the schema validation of a whole notebook was about a sixth of nbgrader's own
        time per notebook, paid twice (sanitizing, then grading)."""
        from nbconvert.exporters import Exporter

        nb_copy, resources = Exporter.from_notebook_node(self, nb, resources, **kw)
        resources["output_suffix"] = (".nbconvert" if self.nbformat_version == nb_copy.nbformat
                                      else f".v{self.nbformat_version}")
        if self.nbformat_version == nb_copy.nbformat == 4:
            output = _writes_v4(nb_copy)
        else:
            output = nbformat.writes(nb_copy, version=self.nbformat_version)
        return output if output.endswith("\n") else output + "\n", resources

    def from_filename(self, filename: str, resources: Any = None, **kw: Any) -> tuple[Any, Any]:
        info = (resources or {}).get("nbgrader")
        if not info:
            return super().from_filename(filename, resources, **kw)
        import datetime
        import os

        from grader.spec.messages import say

        key = (info["student"], info["assignment"], info["notebook"])
        try:
            nb = _ReadForThisCall.of(read_submission(filename))
            foreign = _foreign(nb, info["db_url"], info["assignment"], info["notebook"])
        except UnreadableSubmission as why:
            foreign, reason = "", say("unreadable_submission", file=filename, why=why)
        else:
            reason = say("foreign_submission", file=filename, why=foreign) if foreign else ""
        if reason:
            reason = self._relative(reason)  # (the student reads it too: no absolute path)
            self.log.warning("%s", reason)
            _CLASSROOM.unreadable[key] = reason
            nb = placeholder_notebook(info["db_url"], info["assignment"], info["notebook"], reason)
        else:
            if getattr(self.parent, "_sanitizing", True):  # the submitted file itself was read
                _CLASSROOM.unreadable.pop(key, None)
        resources.setdefault("metadata", {})
        resources["metadata"].update(name=os.path.splitext(os.path.basename(filename))[0],
                                     path=os.path.dirname(filename))
        try:
            stamp = datetime.datetime.fromtimestamp(os.path.getmtime(filename), tz=datetime.timezone.utc)
            resources["metadata"]["modified_date"] = stamp.strftime("%B %-d, %Y")
        except OSError:
            pass
        if key in _CLASSROOM.unreadable or not getattr(self.parent, "_sanitizing", True):
            return self.from_notebook_node(nb, resources, **kw)
        try:
            return self.from_notebook_node(nb, copy.deepcopy(resources), **kw)  # (nbconvert copies nb)
        except Exception as exc:  # a notebook nbgrader's sanitizing trips over (e.g. every cell deleted)
            if _not_the_notebooks_fault(exc):
                raise
            reason = self._relative(say("unreadable_submission", file=filename, why=f"nbgrader could not prepare "
                                        f"it for grading ({type(exc).__name__}: {_one_line(exc)})"))
            self.log.warning("%s", reason)
            _CLASSROOM.unreadable[key] = reason
            nb = placeholder_notebook(info["db_url"], info["assignment"], info["notebook"], reason)
            return self.from_notebook_node(nb, resources, **kw)


def _writes_v4(nb: Any) -> str:
    """nbformat.v4.writes(nb), byte for byte, without its deep copy of the whole notebook: ``nb`` is the exporter's
    own copy, written once and dropped (its sources and outputs are split into lines in place)."""
    import json

    from nbformat.v4.nbjson import BytesEncoder
    from nbformat.v4.rwbase import split_lines, strip_transient

    return json.dumps(strip_transient(split_lines(nb)), cls=BytesEncoder, indent=1, sort_keys=True,
                      separators=(",", ": "), ensure_ascii=False)


class _ReadForThisCall(NotebookNode):
    """A notebook read from its file for one export alone. nbconvert deep-copies it three times before the first
    preprocessor sees it (Exporter.from_notebook_node, Exporter._preprocess, nbformat's validator.normalize), each
    to protect a notebook someone else may hold; nobody else holds this one, so those three copies hand over the
    notebook itself (two copies of every cell and output per pass saved). From then on it is a plain NotebookNode,
    copied as usual (tests/test_exporter.py checks both against nbconvert's own sequence)."""

    HANDOVERS = 3

    @classmethod
    def of(cls, nb: NotebookNode) -> "_ReadForThisCall":
        object.__setattr__(nb, "__class__", cls)  # (NotebookNode's own __setattr__ refuses it)
        object.__setattr__(nb, "_handovers", cls.HANDOVERS)  # (in the instance's __dict__, not a notebook field)
        return nb  # type: ignore[return-value]

    def __deepcopy__(self, memo: dict) -> NotebookNode:
        left = self.__dict__["_handovers"] - 1
        if left > 0:
            self.__dict__["_handovers"] = left
        else:
            del self.__dict__["_handovers"]
            object.__setattr__(self, "__class__", NotebookNode)
        return self


def _foreign(nb: Any, db_url: str, assignment: str, notebook_id: str) -> str:
    """Why a readable notebook is not this course's ``notebook_id`` (none of its cells is one of the exercise or
    test cells the gradebook knows for it), or ""."""
    notebook = instructor_notebook(db_url, assignment, notebook_id)
    ours = set(notebook.points) | notebook.solutions
    theirs = {str(cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")) for cell in nb.cells
              if isinstance(cell.get("metadata", {}).get("nbgrader"), dict)}
    if not ours or not nb.cells or theirs & ours:  # (an empty notebook: nbgrader's sanitizing says so, below)
        return ""
    return (f"none of its {len(nb.cells)} cells is an exercise or test cell of {notebook_id} "
            "(another course's notebook, or another notebook under this name?)")


def _not_the_notebooks_fault(exc: BaseException) -> bool:
    """The gradebook, the disk or nbgrader's metadata version: nbgrader's own handling applies."""
    import sqlalchemy.exc
    from nbgrader.nbgraderformat import SchemaTooNewError, SchemaTooOldError

    return isinstance(exc, (sqlalchemy.exc.SQLAlchemyError, SchemaTooOldError, SchemaTooNewError, OSError,
                            MemoryError))


class GradingStopped(SystemExit):
    """The grading environment broke: nbgrader must stop, not blame the student being graded (its per-student
    handler catches every Exception, so this is not one)."""


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


class CheckCellMetadata(NbGraderPreprocessor):
    """nbgrader's CheckCellMetadata, with the schema compiled once: nbgrader's checks each cell with
    ``jsonschema.validate``, which first checks the schema itself against JSON Schema's meta-schema, every time
    (a seventh of nbgrader's own time per notebook, for a schema that never changes). Same checks, same errors."""

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        import traceback

        from nbgrader.nbgraderformat import ValidationError

        try:
            _metadata_validator().validate_nb(nb)
        except ValidationError:
            self.log.error(traceback.format_exc())
            msg = "Notebook failed to validate; the nbgrader metadata may be corrupted."
            self.log.error(msg)
            raise ValidationError(msg)
        return nb, resources


_METADATA_VALIDATOR: list[Any] = []


def _metadata_validator() -> Any:
    """nbgrader's MetadataValidator whose cells are checked by one compiled jsonschema validator."""
    if not _METADATA_VALIDATOR:
        import jsonschema
        from nbgrader.nbgraderformat import MetadataValidator, SchemaTooNewError, SchemaTooOldError

        class CompiledMetadataValidator(MetadataValidator):
            def __init__(self) -> None:
                super().__init__()
                jsonschema.validators.validator_for(self.schema).check_schema(self.schema)  # once
                self.compiled = jsonschema.validators.validator_for(self.schema)(self.schema)
                # metadata found valid, by content: every student's copy of a cell has the same (a notebook has a
                # hundred cells; jsonschema takes ~20 us for each)
                self.valid: set[tuple[Any, ...]] = set()

            def validate_cell(self, cell: Any) -> None:  # nbgrader's, but for the compiled schema
                if "nbgrader" not in cell.metadata:
                    return
                schema = cell.metadata["nbgrader"].get("schema_version", 0)
                if schema < self.schema_version:
                    raise SchemaTooOldError(f"Outdated schema version: {schema} (expected {self.schema_version})",
                                            schema, self.schema_version)
                if schema > self.schema_version:
                    raise SchemaTooNewError(f"Schema version is too new: {schema} (expected {self.schema_version})",
                                            schema, self.schema_version)
                key = _content_key(cell.metadata["nbgrader"])
                if key is not None and key in self.valid:
                    return
                error = jsonschema.exceptions.best_match(self.compiled.iter_errors(cell.metadata["nbgrader"]))
                if error is not None:
                    raise error
                if key is not None and len(self.valid) < 100_000:
                    self.valid.add(key)

        _METADATA_VALIDATOR.append(CompiledMetadataValidator())
    return _METADATA_VALIDATOR[0]


def _content_key(mapping: Any) -> tuple[Any, ...] | None:
    """A dict of plain values as a hashable key that tells 1, 1.0 and True apart (None when a value is not plain)."""
    if not isinstance(mapping, dict):
        return None
    key = []
    for name, value in mapping.items():
        if type(value) not in (str, int, float, bool, type(None)):
            return None
        key.append((name, type(value).__name__, value))
    return tuple(sorted(key, key=lambda item: item[0]))


class HideHiddenTests(NbGraderPreprocessor):
    """For feedback: hidden tests' code becomes one comment line; their names, outcomes and diagnoses stay
    in the cell's output (nbgrader's feedback otherwise shows their source, nbgrader issue #917)."""

    placeholder = "# hidden checks on other inputs: their names and outcomes are in the output below"
    # nbconvert configures display_data_priority on every preprocessor (NbConvertBase); nbgrader's base class
    # re-declares it without config=True, so traitlets warned "Config option `display_data_priority` not
    # recognized by `HideHiddenTests`" on each generate_feedback. Declared configurable, as nbgrader's GetGrades does.
    display_data_priority = List(["text/html", "application/pdf", "text/latex", "image/svg+xml", "image/png",
                                  "image/jpeg", "text/plain"]).tag(config=True)

    def preprocess_cell(self, cell: Any, resources: dict[str, Any], index: int) -> tuple[Any, dict[str, Any]]:
        if cell.cell_type == "code" and cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
            lines, kept, hidden = cell.source.split("\n"), [], False
            for line in lines:
                if "BEGIN HIDDEN TESTS" in line:
                    hidden = True
                    kept.append(re.match(r"\s*", line).group(0) + self.placeholder)  # type: ignore[union-attr]
                elif "END HIDDEN TESTS" in line:
                    hidden = False
                elif not hidden:
                    kept.append(line)
            cell.source = "\n".join(kept)
        return cell, resources


class WrapLongLines(NbGraderPreprocessor):
    """For feedback (after nbconvert's CSSHTMLHeaderPreprocessor): CSS that wraps long lines in the page, so a
    diagnosis, a hint, a traceback or a long line of code never makes the page scroll sideways (nbconvert's
    classic template keeps each output line on one line, ``white-space: pre``)."""

    css = """
div.output_area pre, div.output_subarea pre, div.input_area pre, div.text_cell_render pre, pre {
  white-space: pre-wrap; overflow-wrap: anywhere; word-break: normal;
}
div.output_subarea, div.input_area, div.inner_cell, div.text_cell_render { min-width: 0; overflow-wrap: anywhere; }
div.output_subarea { max-width: 100%; }
div.output_subarea img, div.output_subarea svg, div.text_cell_render img { max-width: 100%; height: auto; }
div.nbgrader_cell .panel-heading { height: auto; min-height: 37px; }
"""
    display_data_priority = List(["text/html", "application/pdf", "text/latex", "image/svg+xml", "image/png",
                                  "image/jpeg", "text/plain"]).tag(config=True)  # (as HideHiddenTests)

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        resources.setdefault("inlining", {}).setdefault("css", []).append(self.css)
        return nb, resources


class TrustedExecute(NbGraderPreprocessor):
    """Replaces nbgrader's Execute: student code runs in a sandbox, test cells are judged outside it.

    Each graded test cell gets the verdict as its output: the checks' ✓ lines when it passed, an
    AssertionError with the diagnosis when it failed or could not run. nbgrader's SaveAutoGrades then
    scores those outputs as usual (error → 0, otherwise full points), so the gradebook, formgrader,
    feedback and export work unchanged. Warnings and stderr never reach a test cell's output.
    """

    timeout = Float(120.0, help="Seconds one notebook may run in the sandbox.").tag(config=True)
    policy = Bool(True, help="Compile every cell a student wrote or changed under the course's policy "
                             "(grader.sandboxed.policy). Off only to test the layers beneath it as if the policy had a hole "
                             "(tests/adversarial/, `# policy: off`); never for a real class.").tag(config=True)
    allow_unsandboxed = Bool(False, help="Run student code without bubblewrap when it cannot start. "
                                         "Only for code you trust.").tag(config=True)
    parallel = Bool(True, help="Grade the whole class ahead, in a pool of sandboxed workers (one per core), "
                               "while nbgrader records the results one notebook at a time.").tag(config=True)
    workers = Int(0, help="Sandboxed workers grading at once (0: one per core). With a Dask scheduler: wait "
                          "until its workers have that many threads (0: one worker).").tag(config=True)
    scheduler = Unicode("", help="Address of a Dask scheduler (e.g. 'tls://host:8786', with the course's "
                                 "certificates: python -m grader.cluster certificates): notebooks then run in the "
                                 "sandboxes of its Dask workers, on other machines, and are judged here. Empty: the "
                                 "environment variable GRADER_SCHEDULER; both empty: this machine's own pool "
                                 "(README: 'Grading on many machines').").tag(config=True)
    pool_class = Type("grader.isolation.pool.Pool", klass=object,
                      help="The pool of sandboxed workers: called as pool_class(hide=[...], workers=None or 1). "
                           "Raises grader.isolation.sandbox.SetupError when a worker never becomes ready. "
                           "For tests of the grading machinery only.").tag(config=True)

    def scheduler_address(self) -> str:
        """The Dask scheduler to grade on ("": this machine): the ``scheduler`` setting, else $GRADER_SCHEDULER."""
        import os

        return (self.scheduler or os.environ.get("GRADER_SCHEDULER", "")).strip()

    def setup_problem(self, key: str, **fields: str) -> tuple[str, str]:
        """(what happened, what to do) for a setup problem: of this machine's sandbox, or of the Dask cluster."""
        from grader.spec.messages import message, say

        key = key + "_cluster" if self.scheduler_address() else key
        return say(key, **fields), message(key).hint

    def _coursedir(self) -> Any:
        return getattr(getattr(getattr(self, "parent", None), "parent", None), "coursedir", None)

    def _course_root(self) -> Path | None:
        root = getattr(self._coursedir(), "root", None)
        return Path(root).resolve() if root else None

    def _instructor_sources(self, assignment: str, notebook_id: str) -> frozenset[str]:
        """The code cells of the instructor's notebook (source and release folders): a submitted cell identical to
        one of them runs as it is; every other one under the course's policy (``grader.sandboxed.policy``)."""
        coursedir = self._coursedir()
        root = self._course_root()
        if coursedir is None or root is None:
            return frozenset()
        paths = tuple(root / folder / assignment / f"{notebook_id}.ipynb"
                      for folder in (coursedir.source_directory, coursedir.release_directory))
        return instructor_sources(paths)

    @staticmethod
    def _trusted_cells(db_url: str, assignment: str, notebook_id: str) -> dict[str, Any]:
        """grade_id -> the instructor's test and locked cells, from the gradebook (hidden tests included)."""
        cells: dict[str, Any] = {}
        notebook = instructor_notebook(db_url, assignment, notebook_id)
        points = {name: notebook.points[name] for name in notebook.code_grades}
        for name, cell_type, source, locked, _ in notebook.source_cells:
            if cell_type != "code" or not (locked or name in points):
                continue
            meta = {"grade_id": name, "locked": locked, "grade": name in points, "points": points.get(name, 0),
                    "solution": False}
            cells[name] = new_code_cell(source, metadata={"nbgrader": meta})
        return cells

    def _save(self, result: Any, info: dict[str, Any]) -> None:
        """Keep the verdicts with their diagnoses for the class report (grader_results/, next to the gradebook)."""
        import json

        root = self._course_root()
        if root is None:
            return
        from grader.judge.outputs import course_relative

        folder = root / RESULTS_DIR / info["assignment"] / info["student"]
        folder.mkdir(parents=True, exist_ok=True)
        saved = course_relative(result.as_dict(), root)  # (diagnoses as students read them: no absolute path)
        (folder / f"{info['notebook']}.json").write_text(json.dumps(saved, indent=1), encoding="utf-8")

    def _hide(self, db_url: str) -> list[Path]:
        from grader.isolation.sandbox import course_hidden

        return course_hidden(self._course_root(), db_url)

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        from grader.judge import runner
        from grader.isolation import sandbox
        from grader.spec.messages import say

        info = resources["nbgrader"]
        name = f"{info['student']}/{info['assignment']}/{info['notebook']}"
        hide = self._hide(info["db_url"])
        key = (info["student"], info["assignment"], info["notebook"])
        try:
            future = _CLASSROOM.ahead(self, info, hide) if self.parallel else _CLASSROOM.start(self, hide)
            unreadable = _CLASSROOM.unreadable.get(key)
            if unreadable:
                if future is not None:
                    future.cancel()
                trusted = self._trusted_cells(info["db_url"], info["assignment"], info["notebook"])
                result = _unreadable_result(name, trusted, unreadable)
            elif future is not None:
                result = future.result()
            else:
                cells = runner.cells_to_run(nb, self._trusted_cells(info["db_url"], info["assignment"], info["notebook"]),
                                            self._instructor_sources(info["assignment"], info["notebook"]),
                                            policy=self.policy)
                result = runner.grade_cells(name, cells, "the gradebook", self.timeout, self.allow_unsandboxed, hide,
                                            _CLASSROOM.pool)
        except (sandbox.SetupError, runner.SandboxRefused) as exc:
            # nbgrader would blame this student and go on to fail every other one: stop the run instead
            self.log.error("%s %s", *self.setup_problem("setup_failed_midway", current=info["student"],
                                                        cause=_one_line(exc)))
            _CLASSROOM.close()
            coursedir = self._coursedir()
            if coursedir is not None:  # as nbgrader does for a failed student: a re-run then grades it again
                from nbgrader.utils import rmtree

                folder = coursedir.format_path(coursedir.autograded_directory, info["student"], info["assignment"])
                if Path(folder).is_dir():
                    rmtree(folder)
            raise GradingStopped(1) from None
        _write_verdicts(nb, result, self._course_root())
        self._save(result, info)
        if result.flags:
            self.log.warning("%s", say("flagged_notebook", name=name, what=flags_text(result.flags)))
        if (result.problem and not unreadable) or result.restored:  # (an unreadable one: said when it was read)
            self.log.warning("%s: %s", name, "; ".join(filter(None, [result.problem, *(
                ["restored " + ", ".join(result.restored)] if result.restored else [])])))
        self.log.info("%s: %g/%g points (trusted grading, %.1f s)", name, result.score, result.max_score, result.seconds)
        return nb, resources


def flags_text(flags: list[dict[str, Any]]) -> str:
    """'square-first-order: gc.get_referrers; cell 7: ctypes.memmove', on one line whatever the flags hold."""
    def clean(value: Any) -> str:
        text = " ".join(str(value).split())
        return text[:200] + "..." if len(text) > 200 else text

    return "; ".join(f"{clean(f.get('cell', '?'))}: {clean(f.get('what', '?'))}" for f in flags if isinstance(f, dict))


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()).rstrip(".") or type(exc).__name__


def _unreadable_result(name: str, trusted: dict[str, Any], reason: str) -> Any:
    """Every test cell of the notebook failed, with the one reason the submission could not be read."""
    from grader.judge.runner import CellResult, NotebookResult

    result = NotebookResult(name, "the gradebook", problem=reason)
    for grade_id, cell in trusted.items():
        meta = cell.metadata["nbgrader"]
        if meta.get("grade"):
            result.cells.append(CellResult(grade_id, 0.0, float(meta.get("points", 0) or 0), "failed", reason,
                                           [{"mistake": "unreadable_submission", "title": reason, "hidden": False}]))
    return result


def _write_verdicts(nb: Any, result: Any, root: Path | None = None) -> None:
    """Each graded test cell's output becomes its verdict (nbgrader scores error outputs 0); every other code
    cell gets what it showed in the sandbox (prints, errors, graphs), as stock nbgrader's Execute keeps them.
    The grading machine's absolute paths (in tracebacks, in messages) are shown relative to the course
    (``outputs.course_relative``): this notebook is what the feedback page shows the student."""
    from collections import defaultdict, deque

    from grader.judge import outputs
    from grader.spec.messages import say

    def relative(text: str) -> str:
        return outputs.course_relative(text, root)

    verdicts = {c.grade_id: c for c in result.cells}
    shown: dict[str, deque] = defaultdict(deque)
    for key, cell_outputs in getattr(result, "outputs", []):
        shown[key].append(cell_outputs)
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type != "code":
            continue
        cell.outputs = []
        cell.execution_count = None
        verdict = verdicts.get(meta.get("grade_id")) if meta.get("grade") and not meta.get("solution") else None
        if verdict is None:
            queue = shown.get(outputs.source_key(cell.source))
            if queue:
                cell.outputs = [nbformat.from_dict(outputs.course_relative(o, root)) for o in queue.popleft()]
            continue
        # (what nbformat's new_output makes, without validating each one against the schema: ~1 ms a notebook)
        if verdict.status == "passed":
            cell.outputs.append(NotebookNode(output_type="stream", name="stdout", text=relative(verdict.message) + "\n"))
        else:
            message = relative(verdict.message if verdict.status == "failed" else
                               say("not_checked", reason=verdict.message))
            cell.outputs.append(NotebookNode(output_type="error", ename="AssertionError", evalue=message,
                                             traceback=["AssertionError: " + message]))


class _Classroom:
    """The class being autograded: one pool of sandboxed workers, grading the class ahead of nbgrader (a
    ``_Feeder`` per assignment hands the submissions to the pool, in nbgrader's order, a window ahead)."""

    def __init__(self) -> None:
        self.pool: Any = None
        self.unsandboxed = False  # no sandbox here, and the instructor allowed grading without one
        self.unreadable: dict[tuple[str, str, str], str] = {}  # (student, assignment, notebook) -> why
        self.feeders: dict[str, _Feeder] = {}  # assignment -> its feeder
        self.lock = threading.Lock()
        self.executor: ThreadPoolExecutor | None = None
        self.log: Any = None

    def start(self, plugin: TrustedExecute, hide: list[Path]) -> None:
        """Start the pool of sandboxed workers (once). Raises SetupError (a worker never became ready, or the
        pool could not start at all) or SandboxRefused: the grading machine's problems, never a student's."""
        with self.lock:
            self._start(plugin, hide)

    def _start(self, plugin: TrustedExecute, hide: list[Path]) -> None:
        from grader.isolation import pool as pools
        from grader import checks
        from grader.judge import runner
        from grader.isolation import sandbox

        if self.pool is not None or self.unsandboxed:
            return
        from grader.isolation.pool import Pool

        address = plugin.scheduler_address()
        ok, why = (True, "") if address else sandbox.available()  # with Dask, the workers' sandboxes are checked
        if not ok:
            if not plugin.allow_unsandboxed:
                raise runner.SandboxRefused(f"refusing to autograde without a sandbox: {why}. Set "
                                            "c.TrustedExecute.allow_unsandboxed = True only for trusted code.")
            self.unsandboxed = True
            return
        count = (plugin.workers or None) if plugin.parallel else 1
        # torch's first-use costs of judging (about a second), paid while the workers start and grade the first
        # notebooks, not by the first verdicts: the process mostly waits meanwhile
        threading.Thread(target=checks.warm_up, name="grader-judge-warm-up").start()
        try:
            if address and plugin.pool_class is Pool:
                pools.discard_early()  # a pool started early on this machine is not the one asked for
                from grader.isolation.cluster import DaskPool

                pool = DaskPool(hide=hide, workers=count, scheduler=address, log=plugin.log)
                plugin.log.info("grading on the Dask cluster at %s: %s", address, pool.describe())
            else:
                # the pool `python -m grader.nbgrader_job` started while nbgrader was starting, when it is the one
                # this configuration asks for (else it is closed, and this one started)
                pool = pools.take_early(hide, count) if plugin.pool_class is pools.Pool else None
                if pool is None:
                    pools.discard_early()
                    pool = plugin.pool_class(hide=hide, **({"workers": count} if count else {}))
        except sandbox.SetupError:
            raise
        except Exception as exc:
            raise sandbox.SetupError(f"the pool of sandboxed workers could not start ({type(exc).__name__}: "
                                     f"{_one_line(exc)})") from exc
        self.pool, self.log = pool, plugin.log
        # notebooks kept in flight: one per sandbox (a Dask cluster: its threads when grading starts)
        self.executor = ThreadPoolExecutor(max_workers=getattr(pool, "in_flight", 0) or getattr(pool, "size", 1),
                                           thread_name_prefix="grader-ahead")
        # Before the interpreter joins ThreadPoolExecutor threads at exit (threading's own exit hooks, which run
        # before atexit's): grading left queued then (nbgrader stopped early) is cancelled, not waited for.
        register = getattr(threading, "_register_atexit", atexit.register)
        register(self.close)

    def ahead(self, plugin: TrustedExecute, info: dict[str, Any], hide: list[Path]) -> Future | None:
        """The notebook nbgrader is about to record, graded ahead in the pool (its Future), or None when it was
        not (unreadable, not of this assignment, or no pool): then it is graded on its own. The class streams
        into the pool from the exporter's creation, or else from the first notebook of its assignment."""
        feeder = self.feed(plugin, info, hide)
        return None if feeder is None else feeder.take(info["student"], info["notebook"])

    def feed(self, plugin: TrustedExecute, info: dict[str, Any], hide: list[Path]) -> _Feeder | None:
        """The feeder of ``info["assignment"]`` (started now if it was not), or None without a pool or a course."""
        with self.lock:
            self._start(plugin, hide)
            if self.pool is None:
                return None
            assignment = info["assignment"]
            feeder = self.feeders.get(assignment)
            if feeder is None:
                coursedir = plugin._coursedir()
                if coursedir is None or plugin._course_root() is None:
                    return None
                feeder = self.feeders[assignment] = _Feeder(self, plugin, coursedir, info, hide)
            return feeder

    def close(self) -> None:
        for feeder in list(self.feeders.values()):
            feeder.stop()
        executor, pool, self.executor, self.pool = self.executor, self.pool, None, None
        if executor is not None:
            executor.shutdown(cancel_futures=True)
        if pool is not None:
            pool.close()
            if getattr(pool, "late_problem", "") and self.log is not None:
                self.log.warning("a sandboxed worker started after the first ones could not start (%s); the class was "
                                 "graded by the others", pool.late_problem)


class _Feeder:
    """Streams one assignment's submissions into the pool, in the order nbgrader records them, at most
    ``window`` notebooks ahead of nbgrader: the first notebook is graded at once (nothing is read before it
    that scales with the class), the pool is kept busy, and a class of any size holds a bounded memory.

    nbgrader goes through the submitted folders sorted by path, and a folder's notebooks sorted by name; a
    notebook's place in that order is (folder path, file name). Students nbgrader leaves out are left out too
    (``CourseDirectory.student_id_exclude``, or autograded before and not ``--force``d nor re-submitted since);
    whatever nbgrader goes past without asking for it is dropped, and when nbgrader is ahead, the feeder
    jumps to where nbgrader is."""

    def __init__(self, classroom: _Classroom, plugin: TrustedExecute, coursedir: Any, info: dict[str, Any],
                 hide: list[Path]) -> None:
        self.classroom, self.plugin, self.coursedir, self.hide = classroom, plugin, coursedir, hide
        self.assignment, self.db_url = info["assignment"], info["db_url"]
        self.force = bool(getattr(getattr(getattr(plugin, "parent", None), "parent", None), "force", False))
        self.excluded = set(filter(None, (coursedir.student_id_exclude or "").split(",")))
        self.window = 4 * getattr(classroom.pool, "size", 1) + 4
        self.cond = threading.Condition()
        self.pending: dict[tuple[str, str], tuple[tuple[str, str], Future]] = {}  # (student, notebook) -> (place, future)
        self.position: tuple[str, str] | None = None  # place of the last notebook handed over or passed
        self.requested: tuple[str, str] | None = None  # place of the last notebook nbgrader asked for
        self.done = self.stopped = False
        self.thread = threading.Thread(target=self._run, name=f"grader-feeder-{self.assignment}", daemon=True)
        self.thread.start()

    def place(self, student: str, notebook_id: str) -> tuple[str, str]:
        folder = self.coursedir.format_path(self.coursedir.submitted_directory, student, self.assignment)
        return folder, f"{notebook_id}.ipynb"

    def take(self, student: str, notebook_id: str) -> Future | None:
        """The Future of this notebook (then no longer the feeder's), waiting until the feeder has got that far;
        None when it was not graded ahead."""
        place = self.place(student, notebook_id)
        with self.cond:
            self.requested = max(place, self.requested or place)
            for key, (where, future) in list(self.pending.items()):  # nbgrader went past them: not needed
                if where < place:
                    future.cancel()
                    del self.pending[key]
            while not (self.done or self.stopped) and (self.position is None or self.position < place):
                self.cond.wait()
            entry = self.pending.pop((student, notebook_id), None)
            self.cond.notify_all()
        return entry[1] if entry else None

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            for _, future in self.pending.values():
                future.cancel()
            self.pending.clear()
            self.cond.notify_all()

    def _will_grade(self, folder: str, student: str) -> bool:
        """Whether nbgrader autogrades this student's submission (its BaseConverter.init_destination)."""
        if student in self.excluded:
            return False
        if self.force:
            return True
        dest = self.coursedir.format_path(self.coursedir.autograded_directory, student, self.assignment)
        if not os.path.exists(dest):
            return True
        new, old = _timestamp(folder), _timestamp(dest)
        return new is not None and old is not None and new > old

    def _run(self) -> None:
        from grader.judge import runner

        trusted: dict[str, dict[str, Any]] = {}
        try:
            pattern = self.coursedir.format_path(self.coursedir.submitted_directory, self.coursedir.student_id,
                                                 self.assignment)
            for folder in sorted(glob.glob(pattern)):
                student = Path(folder).parent.name
                if not self._will_grade(folder, student):
                    continue
                for path in sorted(Path(folder).glob("*.ipynb")):
                    notebook_id, place = path.stem, (folder, path.name)
                    with self.cond:
                        while not self.stopped and len(self.pending) >= self.window and \
                                not (self.requested and place < self.requested):
                            self.cond.wait()
                        if self.stopped:
                            return
                        if self.requested and place < self.requested:  # nbgrader is past it already
                            self.position = place
                            self.cond.notify_all()
                            continue
                    future = self._submit(runner, trusted, student, notebook_id, path)
                    with self.cond:
                        if future is not None:
                            self.pending[(student, notebook_id)] = (place, future)
                        self.position = place
                        self.cond.notify_all()
        except Exception as exc:  # nbgrader grades the rest on its own, one notebook at a time
            self.plugin.log.warning("grading ahead stopped (%s: %s); the rest is graded one notebook at a time",
                                    type(exc).__name__, _one_line(exc))
        finally:
            with self.cond:
                self.done = True
                self.cond.notify_all()

    def _submit(self, runner: Any, trusted: dict[str, dict[str, Any]], student: str, notebook_id: str,
                path: Path) -> Future | None:
        if notebook_id not in trusted:
            try:
                trusted[notebook_id] = self.plugin._trusted_cells(self.db_url, self.assignment, notebook_id)
            except Exception:
                trusted[notebook_id] = {}  # not a notebook of this assignment: nbgrader will say so
        if not trusted[notebook_id]:
            return None
        name = f"{student}/{self.assignment}/{notebook_id}"
        # one file's problem stays with that file: nbgrader grades it on its own when it gets there
        try:
            cells = runner.cells_to_run(read_submission(path), trusted[notebook_id],
                                        self.plugin._instructor_sources(self.assignment, notebook_id),
                                        policy=self.plugin.policy)
        except UnreadableSubmission:
            return None  # SubmissionExporter says why, when nbgrader reads it
        except Exception as exc:
            self.plugin.log.warning("%s: not graded ahead (%s: %s)", name, type(exc).__name__, _one_line(exc))
            return None
        executor, pool = self.classroom.executor, self.classroom.pool
        if executor is None:
            return None
        expect = getattr(pool, "expect", None)  # the local pool starts its later workers when the class needs them
        if expect is not None:
            expect(1)
        try:
            future = executor.submit(runner.grade_cells, name, cells, "the gradebook", self.plugin.timeout, False,
                                     self.hide, pool)
        except RuntimeError:  # shut down meanwhile
            if expect is not None:
                expect(-1)
            return None
        if expect is not None:  # announced, but never to run
            future.add_done_callback(lambda f: f.cancelled() and expect(-1))
        return future


def _timestamp(folder: str) -> Any:
    """The submission time in ``folder``/timestamp.txt (as nbgrader reads it), or None."""
    from nbgrader.utils import parse_utc

    try:
        with open(os.path.join(folder, "timestamp.txt")) as f:
            return parse_utc(f.read().strip())
    except Exception:
        return None


_CLASSROOM = _Classroom()
