"""nbgrader preprocessors of the course, named in ``nbgrader_config.py``.

``NamedStubs`` replaces each ``### BEGIN SOLUTION`` region with a stub that names
the exercise and the function to write, so a student who runs an unfinished
cell reads ``NotImplementedError: exercise 'square': write Square.backward``.
"""

from __future__ import annotations

import re

import nbformat
from nbformat import NotebookNode
from nbgrader.preprocessors import ClearSolutions

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
    """ClearSolutions whose Python stub says which exercise and which function to write."""

    stub_template = '# YOUR CODE HERE\nraise NotImplementedError("exercise {exercise!r}: write {target}")'

    def _replace_solution_region(self, cell: NotebookNode, language: str) -> bool:
        if cell.cell_type != "code" or language != "python":
            return super()._replace_solution_region(cell, language)
        exercise = cell.metadata.get("nbgrader", {}).get("grade_id", "?")
        new_lines: list[str] = []
        in_solution = replaced = False
        for line in cell.source.split("\n"):
            if self.begin_solution_delimeter in line:
                if in_solution:
                    raise RuntimeError(f"nested BEGIN SOLUTION in cell {exercise!r}")
                in_solution = replaced = True
                indent = re.match(r"\s*", line).group(0)  # type: ignore[union-attr]
                target = enclosing_name(new_lines, indent) or "this part"
                stub = self.stub_template.format(exercise=exercise, target=target)
                new_lines.extend(indent + stub_line for stub_line in stub.split("\n"))
            elif self.end_solution_delimeter in line:
                in_solution = False
            elif not in_solution:
                new_lines.append(line)
        if in_solution:
            raise RuntimeError(f"no END SOLUTION in cell {exercise!r}")
        cell.source = "\n".join(new_lines)
        return replaced


# --- trusted autograding -------------------------------------------------------------------------------

import atexit  # noqa: E402
import threading  # noqa: E402
from concurrent.futures import Future, ThreadPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from nbformat.v4 import new_code_cell, new_output  # noqa: E402
from nbgrader.preprocessors import NbGraderPreprocessor  # noqa: E402
from traitlets import Bool, Float  # noqa: E402


RESULTS_DIR = "grader_results"  # <course root>/grader_results/<assignment>/<student>/<notebook>.json


class ForgetUnknownCells(NbGraderPreprocessor):
    """Sanitizing: a cell whose grade_id the gradebook does not know (renamed or invented in the submission)
    becomes plain code, instead of failing the whole notebook; the real test cell, now missing, is added
    back by OverwriteCells (add_missing_cells) and graded as usual."""

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        from nbgrader.api import Gradebook

        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gb:
            known = {c.name for c in gb.find_notebook(info["notebook"], info["assignment"]).source_cells}
        for cell in nb.cells:
            meta = cell.get("metadata", {})
            grade_id = meta.get("nbgrader", {}).get("grade_id")
            if "nbgrader" in meta and grade_id not in known:
                self.log.warning("cell %r is not in the gradebook (renamed?): graded as plain code", grade_id)
                del meta["nbgrader"]
        return nb, resources


class HideHiddenTests(NbGraderPreprocessor):
    """For feedback: hidden tests' code becomes one comment line; their names, outcomes and diagnoses stay
    in the cell's output (nbgrader's feedback otherwise shows their source, nbgrader issue #917)."""

    placeholder = "# hidden checks on other inputs: their names and outcomes are in the output below"

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


class TrustedExecute(NbGraderPreprocessor):
    """Replaces nbgrader's Execute: student code runs in a sandbox, test cells are judged outside it.

    Each graded test cell gets the verdict as its output: the checks' ✓ lines when it passed, an
    AssertionError with the diagnosis when it failed or could not run. nbgrader's SaveAutoGrades then
    scores those outputs as usual (error → 0, otherwise full points), so the gradebook, formgrader,
    feedback and export work unchanged. Warnings and stderr never reach a test cell's output.
    """

    timeout = Float(120.0, help="Seconds one notebook may run in the sandbox.").tag(config=True)
    allow_unsandboxed = Bool(False, help="Run student code without bubblewrap when it cannot start. "
                                         "Only for code you trust.").tag(config=True)
    parallel = Bool(True, help="Grade the whole class ahead, in a pool of sandboxed workers (one per core), "
                               "while nbgrader records the results one notebook at a time.").tag(config=True)

    def _coursedir(self) -> Any:
        return getattr(getattr(getattr(self, "parent", None), "parent", None), "coursedir", None)

    def _course_root(self) -> Path | None:
        root = getattr(self._coursedir(), "root", None)
        return Path(root).resolve() if root else None

    @staticmethod
    def _trusted_cells(db_url: str, assignment: str, notebook_id: str) -> dict[str, Any]:
        """grade_id -> the instructor's test and locked cells, from the gradebook (hidden tests included)."""
        from nbgrader.api import Gradebook

        cells: dict[str, Any] = {}
        with Gradebook(db_url) as gb:
            notebook = gb.find_notebook(notebook_id, assignment)
            points = {g.name: g.max_score for g in notebook.grade_cells if g.cell_type == "code"}
            for source in notebook.source_cells:
                if source.cell_type != "code" or not (source.locked or source.name in points):
                    continue
                meta = {"grade_id": source.name, "locked": bool(source.locked), "grade": source.name in points,
                        "points": points.get(source.name, 0), "solution": False}
                cells[source.name] = new_code_cell(source.source, metadata={"nbgrader": meta})
        return cells

    def _save(self, result: Any, info: dict[str, Any]) -> None:
        """Keep the verdicts with their diagnoses for the class report (grader_results/, next to the gradebook)."""
        import json

        root = self._course_root()
        if root is None:
            return
        folder = root / RESULTS_DIR / info["assignment"] / info["student"]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{info['notebook']}.json").write_text(json.dumps(result.as_dict(), indent=1), encoding="utf-8")

    def _hide(self, db_url: str) -> list[Path]:
        root = self._course_root()
        hide = [root] if root else []
        db_path = str(db_url).removeprefix("sqlite:///")
        if db_path and db_path != db_url:
            hide.append(Path(db_path).resolve().parent)
        return sorted(set(hide))

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        from . import runner

        info = resources["nbgrader"]
        name = f"{info['student']}/{info['assignment']}/{info['notebook']}"
        hide = self._hide(info["db_url"])
        key = (info["student"], info["assignment"], info["notebook"])
        future = _CLASSROOM.ahead(self, info, hide) if self.parallel else None
        if future is not None and key in _CLASSROOM.futures:
            result = _CLASSROOM.futures.pop(key).result()
        else:
            cells = runner.cells_to_run(nb, self._trusted_cells(info["db_url"], info["assignment"], info["notebook"]))
            result = runner.grade_cells(name, cells, "the gradebook", self.timeout, self.allow_unsandboxed, hide,
                                        _CLASSROOM.pool)
        _write_verdicts(nb, result)
        self._save(result, info)
        if result.problem or result.restored:
            self.log.warning("%s: %s", name, "; ".join(filter(None, [result.problem, *(
                ["restored " + ", ".join(result.restored)] if result.restored else [])])))
        self.log.info("%s: %g/%g points (trusted grading, %.1f s)", name, result.score, result.max_score, result.seconds)
        return nb, resources


def _write_verdicts(nb: Any, result: Any) -> None:
    """Each graded test cell's output becomes its verdict; nbgrader scores error outputs 0."""
    from .messages import say

    verdicts = {c.grade_id: c for c in result.cells}
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type != "code":
            continue
        cell.outputs = []
        verdict = verdicts.get(meta.get("grade_id")) if meta.get("grade") and not meta.get("solution") else None
        if verdict is None:
            continue
        if verdict.status == "passed":
            cell.outputs.append(new_output("stream", name="stdout", text=verdict.message + "\n"))
        else:
            message = verdict.message if verdict.status == "failed" else say("not_checked", reason=verdict.message)
            cell.outputs.append(new_output("error", ename="AssertionError", evalue=message,
                                           traceback=["AssertionError: " + message]))


class _Classroom:
    """The class being autograded: one pool of sandboxed workers, every submission graded ahead of nbgrader."""

    def __init__(self) -> None:
        self.pool: Any = None
        self.futures: dict[tuple[str, str, str], Future] = {}
        self.started: set[str] = set()
        self.lock = threading.Lock()
        self.executor: ThreadPoolExecutor | None = None

    def ahead(self, plugin: TrustedExecute, info: dict[str, Any], hide: list[Path]) -> Future | None:
        """On the first notebook of an assignment, start grading every submission of it in the pool."""
        from . import runner, sandbox
        from .pool import Pool

        with self.lock:
            if self.pool is None:
                ok, why = sandbox.available()
                if not ok:
                    if not plugin.allow_unsandboxed:
                        raise runner.SandboxRefused(f"refusing to autograde without a sandbox: {why}. Set "
                                                    "c.TrustedExecute.allow_unsandboxed = True only for trusted code.")
                    return None
                self.pool = Pool(hide=hide)
                self.executor = ThreadPoolExecutor(max_workers=self.pool.size)
                atexit.register(self.close)
            assignment = info["assignment"]
            if assignment in self.started:
                return self.futures.get((info["student"], assignment, info["notebook"]))
            self.started.add(assignment)
            coursedir = plugin._coursedir()
            root = plugin._course_root()
            if coursedir is None or root is None:
                return None
            import glob

            trusted: dict[str, dict[str, Any]] = {}
            pattern = coursedir.format_path(coursedir.submitted_directory, coursedir.student_id, assignment)
            for folder in sorted(glob.glob(pattern)):
                student = Path(folder).parent.name
                for path in sorted(Path(folder).glob("*.ipynb")):
                    notebook_id = path.stem
                    if notebook_id not in trusted:
                        try:
                            trusted[notebook_id] = plugin._trusted_cells(info["db_url"], assignment, notebook_id)
                        except Exception:
                            continue  # not a notebook of this assignment: nbgrader will say so
                    submitted = nbformat.read(str(path), as_version=4)
                    cells = runner.cells_to_run(submitted, trusted[notebook_id])
                    assert self.executor is not None
                    self.futures[(student, assignment, notebook_id)] = self.executor.submit(
                        runner.grade_cells, f"{student}/{assignment}/{notebook_id}", cells, "the gradebook",
                        plugin.timeout, False, hide, self.pool)
            return self.futures.get((info["student"], assignment, info["notebook"]))

    def close(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(cancel_futures=True)
        if self.pool is not None:
            self.pool.close()


_CLASSROOM = _Classroom()
