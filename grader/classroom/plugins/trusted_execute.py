"""``TrustedExecute`` (replaces nbgrader's Execute): student code in a sandbox, verdicts here; the class graded
ahead of nbgrader by a scheduler (``_Classroom``, ``_Feeder``)."""

from __future__ import annotations

import atexit
import glob
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Float, Int, Type, Unicode

from grader.boundary.limits import NOTEBOOK_SECONDS
from grader.classroom.plugins import tampering
from grader.classroom.plugins.instructor import instructor_notebook, instructor_sources
from grader.classroom.plugins.submissions import read_submission, UnreadableSubmission
from grader.classroom.report import RESULTS_DIR  # (<course root>/grader_results/<assignment>/<student>/<notebook>.json)
from grader.classroom.untrusted import private_folder


class GradingStopped(SystemExit):
    """The grading environment broke: nbgrader must stop, not blame the student being graded (its per-student
    handler catches every Exception, so this is not one)."""


class TrustedExecute(NbGraderPreprocessor):
    """Replaces nbgrader's Execute: student code runs in a sandbox, test cells are judged outside it.

    Each graded test cell gets the verdict as its output: the checks' ✓ lines when it passed, an
    AssertionError with the diagnosis when it failed or could not run. nbgrader's SaveAutoGrades then
    scores those outputs as usual (error → 0, otherwise full points), so the gradebook, formgrader,
    feedback and export work unchanged. Warnings and stderr never reach a test cell's output.
    """

    timeout = Float(NOTEBOOK_SECONDS, help="Seconds one notebook may run in the sandbox (default: "
                                           "grader.boundary.limits.NOTEBOOK_SECONDS, as `grader grade`).").tag(config=True)
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
                                 "certificates: python -m grader.isolation.cluster certificates): notebooks then run in the "
                                 "sandboxes of its Dask workers, on other machines, and are judged here. Empty: the "
                                 "environment variable GRADER_SCHEDULER; both empty: this machine's own pool "
                                 "(docs/cluster.md: 'Grading on many machines').").tag(config=True)
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

    def _save(self, result: Any, info: dict[str, Any], language: str) -> None:
        """Keep the verdicts with their diagnoses for the class report (grader_results/, next to the gradebook), the
        notebook's language (the table, the report and the export show it, whatever folder it was handed in), and
        the flags: what the notebook's code attempted (``result.flags``), then what sanitizing found the student
        changed in the instructor's cells (``grader.classroom.plugins.tampering``: said in nbgrader's log already)."""
        import json

        changed = tampering.taken(info)  # (taken whatever happens next: they are this notebook's only)
        root = self._course_root()
        if root is None:
            return
        from grader.judge.outputs import course_relative

        folder = root / RESULTS_DIR / info["assignment"] / info["student"]
        if not folder.is_dir():
            private_folder(root / RESULTS_DIR)  # (diagnoses with names: the instructor's only, on a shared server too)
            folder.mkdir(parents=True, exist_ok=True)
        saved = {**course_relative(result.as_dict(), root), "language": language}  # (no absolute path in diagnoses)
        saved["flags"] = [*saved.get("flags", []), *changed]
        (folder / f"{info['notebook']}.json").write_text(json.dumps(saved, indent=1), encoding="utf-8")

    def _hide(self, db_url: str) -> list[Path]:
        from grader.isolation.sandbox import course_hidden

        return course_hidden(self._course_root(), db_url)

    def _graded(self, nb: Any, info: dict[str, Any], name: str, hide: list[Path], future: Future | None,
                language: str) -> Any:
        """The notebook's result: graded ahead (``future``) or now. Any error of the grading machinery that is not
        the grading environment's (SetupError, SandboxRefused: the run stops) makes this notebook alone "not
        graded: grader error": raised into nbgrader, it would remove the submission and fail the class's run."""
        from grader.isolation import sandbox
        from grader.judge import runner
        from grader.spec import messages

        try:
            if future is not None:
                return future.result()
            cells = runner.cells_to_run(nb, self._trusted_cells(info["db_url"], info["assignment"], info["notebook"]),
                                        self._instructor_sources(info["assignment"], info["notebook"]),
                                        policy=self.policy)
            return runner.grade_cells(name, cells, "the gradebook", self.timeout, self.allow_unsandboxed, hide,
                                      _CLASSROOM.pool, language=language)
        except (sandbox.SetupError, runner.SandboxRefused):
            raise
        except Exception as exc:  # noqa: BLE001
            trusted = self._trusted_cells(info["db_url"], info["assignment"], info["notebook"])
            graded = [(grade_id, float(cell.metadata["nbgrader"].get("points", 0) or 0))
                      for grade_id, cell in trusted.items() if cell.metadata["nbgrader"].get("grade")]
            with messages.using(language):
                return runner.not_graded(runner.NotebookResult(name, "the gradebook"), graded,
                                         f"grading failed ({runner.error_text(exc)})")

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        from grader.judge import runner
        from grader.isolation import sandbox
        from grader.spec import messages
        from grader.spec.messages import say

        info = resources["nbgrader"]
        language = messages.language_of(nb)  # the notebook's own: its verdicts and diagnoses are written in it
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
            else:
                result = self._graded(nb, info, name, hide, future, language)
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
        with messages.using(language):
            _write_verdicts(nb, result, self._course_root())
        self._save(result, info, language)
        if result.flags:
            self.log.warning("%s", say("flagged_notebook", name=name, what=flags_text(result.flags)))
        if (result.problem and not unreadable) or result.restored:  # (an unreadable one: said when it was read)
            self.log.warning("%s: %s", name, "; ".join(filter(None, [result.problem_for_instructor or result.problem, *(
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
            message = relative(verdict.message if verdict.status in ("failed", "not graded") else
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
        from grader.judge import custom_functions
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
        threading.Thread(target=custom_functions.warm_up, name="grader-judge-warm-up").start()
        try:
            if address and plugin.pool_class is Pool:
                pools.discard_early()  # a pool started early on this machine is not the one asked for
                from grader.isolation.cluster import DaskPool

                pool = DaskPool(hide=hide, workers=count, scheduler=address, log=plugin.log)
                plugin.log.info("grading on the Dask cluster at %s: %s", address, pool.describe())
            else:
                # the pool `python -m grader.classroom.nbgrader_job` started while nbgrader was starting, when it is the one
                # this configuration asks for (else it is closed, and this one started)
                pool = pools.take_early(hide, count) if plugin.pool_class is pools.Pool else None
                if pool is None:
                    pools.discard_early()
                    # (nbgrader started directly: started as the early pool is, so that a class of two notebooks
                    # does not pay a second worker's warm-up; a pool_class of another kind takes what it takes)
                    starts = pools.as_nbgrader_starts_it() if issubclass(plugin.pool_class, pools.Pool) else {}
                    pool = plugin.pool_class(hide=hide, **({"workers": count} if count else {}), **starts)
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
        self.seconds: dict[str, tuple[float, int]] = {}  # notebook -> (seconds, notebooks) graded so far in this run
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
                paths = sorted(Path(folder).glob("*.ipynb"))
                ordered = self._costliest_first(paths) if len(paths) <= self.window // 2 else paths
                reordered = ordered != paths
                for k, path in enumerate(ordered):
                    notebook_id, place = path.stem, (folder, path.name)
                    # where nbgrader may take from once this one is handed over: every notebook up to it must be;
                    # with the folder's costliest notebook first, that is once the whole folder is
                    reached = place if not reordered else \
                        (folder, paths[-1].name) if k == len(ordered) - 1 else self.position
                    with self.cond:
                        while not self.stopped and len(self.pending) >= self.window and \
                                not (self.requested and place < self.requested):
                            self.cond.wait()
                        if self.stopped:
                            return
                        if self.requested and place < self.requested:  # nbgrader is past it already
                            self.position = reached
                            self.cond.notify_all()
                            continue
                    future = self._submit(runner, trusted, student, notebook_id, path)
                    if future is not None:
                        future.add_done_callback(lambda done, name=notebook_id: self._learn(name, done))
                    with self.cond:
                        if future is not None:
                            self.pending[(student, notebook_id)] = (place, future)
                        self.position = reached
                        self.cond.notify_all()
        except Exception as exc:  # nbgrader grades the rest on its own, one notebook at a time
            self.plugin.log.warning("grading ahead stopped (%s: %s); the rest is graded one notebook at a time",
                                    type(exc).__name__, _one_line(exc))
        finally:
            with self.cond:
                self.done = True
                self.cond.notify_all()

    def _costliest_first(self, paths: list[Path]) -> list[Path]:
        """A student's notebooks with the costliest first, the rest in nbgrader's order: the longest one no longer
        starts last (one student's four notebooks on two workers: notebook 4 ran after 2, and the class's tail
        waited for it), and nbgrader's first one is still among the first graded. The cost is the mean grading
        time of that notebook so far in this run, or before any, the file's size."""
        if len(paths) < 2:
            return list(paths)
        known = [self.seconds.get(p.stem) for p in paths]
        if all(k is not None for k in known):
            costs = [k[0] / k[1] for k in known]  # type: ignore[index]
        else:
            costs = [p.stat().st_size if p.exists() else 0 for p in paths]
        first = max(range(len(paths)), key=lambda k: costs[k])
        return [paths[first], *(p for k, p in enumerate(paths) if k != first)]

    def _learn(self, notebook_id: str, future: Future) -> None:
        """Add a graded notebook's time to its mean (``_costliest_first``)."""
        if future.cancelled() or future.exception() is not None:
            return
        seconds = getattr(future.result(), "seconds", None)
        if isinstance(seconds, (int, float)) and seconds > 0:
            total, count = self.seconds.get(notebook_id, (0.0, 0))
            self.seconds[notebook_id] = (total + seconds, count + 1)

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
        from grader.spec import messages

        try:
            submission = read_submission(path)
            language = messages.language_of(submission)
            cells = runner.cells_to_run(submission, trusted[notebook_id],
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
                                     self.hide, pool, language=language)
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
