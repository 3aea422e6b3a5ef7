"""``SubmissionExporter``: the submission nbgrader converts, read once and checked before grading."""

from __future__ import annotations

import copy
import glob
import os
from pathlib import Path
from typing import Any

import nbformat
from nbconvert.exporters import NotebookExporter
from nbformat import NotebookNode

from grader.classroom.plugins.instructor import instructor_notebook, placeholder_notebook
from grader.classroom.plugins.submissions import read_submission, UnreadableSubmission
from grader.classroom.plugins import trusted_execute  # its _CLASSROOM, read when used (tests replace it)
from grader.classroom.plugins.trusted_execute import TrustedExecute, _one_line


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
        pipeline = getattr(converter, "autograde_preprocessors", [])
        if getattr(converter, "coursedir", None) is not None and any(map(is_trusted_execute, pipeline)):
            from nbgrader.converters.base import NbGraderException

            from grader.judge import runner
            from grader.isolation import sandbox

            plugin = TrustedExecute(parent=self)
            coursedir = converter.coursedir
            try:
                hide = plugin._hide(coursedir.db_url)
                trusted_execute._CLASSROOM.start(plugin, hide)
                # the class streams into the pool from now on, while nbgrader prepares its first student (an
                # assignment named by a pattern waits for nbgrader's first notebook, which names it)
                if plugin.parallel and coursedir.assignment_id and not glob.has_magic(coursedir.assignment_id):
                    trusted_execute._CLASSROOM.feed(plugin, {"assignment": coursedir.assignment_id, "db_url": coursedir.db_url}, hide)
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
            trusted_execute._CLASSROOM.unreadable[key] = reason
            nb = placeholder_notebook(info["db_url"], info["assignment"], info["notebook"], reason)
        else:
            if getattr(self.parent, "_sanitizing", True):  # the submitted file itself was read
                trusted_execute._CLASSROOM.unreadable.pop(key, None)
        resources.setdefault("metadata", {})
        resources["metadata"].update(name=os.path.splitext(os.path.basename(filename))[0],
                                     path=os.path.dirname(filename))
        try:
            stamp = datetime.datetime.fromtimestamp(os.path.getmtime(filename), tz=datetime.timezone.utc)
            resources["metadata"]["modified_date"] = stamp.strftime("%B %-d, %Y")
        except OSError:
            pass
        if key in trusted_execute._CLASSROOM.unreadable or not getattr(self.parent, "_sanitizing", True):
            return self.from_notebook_node(nb, resources, **kw)
        try:
            return self.from_notebook_node(nb, copy.deepcopy(resources), **kw)  # (nbconvert copies nb)
        except Exception as exc:  # a notebook nbgrader's sanitizing trips over (e.g. every cell deleted)
            if _not_the_notebooks_fault(exc):
                raise
            reason = self._relative(say("unreadable_submission", file=filename, why=f"nbgrader could not prepare "
                                        f"it for grading ({type(exc).__name__}: {_one_line(exc)})"))
            self.log.warning("%s", reason)
            trusted_execute._CLASSROOM.unreadable[key] = reason
            nb = placeholder_notebook(info["db_url"], info["assignment"], info["notebook"], reason)
            return self.from_notebook_node(nb, resources, **kw)


def is_trusted_execute(entry: Any) -> bool:
    """Whether an entry of nbgrader's pipeline (a class, or a dotted name as nbgrader_config.py writes it, under any
    name the class is known by: ``grader.classroom.nbgrader_plugins.TrustedExecute`` or its real module's) is TrustedExecute.
    Compared by class, not by name: a name compared as text stops matching silently when a module moves."""
    if isinstance(entry, str):
        from traitlets.utils.importstring import import_item

        try:
            entry = import_item(entry)
        except (ImportError, AttributeError, ValueError):
            return False
    return isinstance(entry, type) and issubclass(entry, TrustedExecute)


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
