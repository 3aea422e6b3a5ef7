"""One `nbgrader autograde` process of `make autograde`, started by ``grader.classroom.course`` (one, or ``JOBS`` of them
over disjoint groups of students sharing one PostgreSQL gradebook).

    GRADER_DB_URL=URL python -m grader.classroom.nbgrader_job --root COURSE [--workers N] [--exclude FILE] [--scores FILE]
                                                -- autograde ASSIGNMENT [nbgrader's options...]

The gradebook comes in the environment (GRADER_DB_URL, as for every nbgrader command of the course), never on
the command line: a database URL may hold a password, and every user of the machine can read a process's
command line. Every line this process logs has that password hidden, and the names nbgrader logs (student ids,
notebooks, cells) have their control characters and ANSI escapes written out (``grader.classroom.untrusted``).

It is nbgrader's own command (``nbgrader ...`` with the same arguments, configuration and log), with these
costs taken off:

* the pool of sandboxed workers starts first, in a thread, while this process imports nbgrader (the workers
  import torch in their sandboxes meanwhile); TrustedExecute takes it when its configuration asks for that
  pool (``grader.isolation.pool.take_early``);
* jsonschema's ``rfc3987_syntax`` is not imported: it builds a grammar for about a second at import, for the
  "iri" string formats, which nbformat never checks (it validates notebooks without a format checker);
* nbgrader's many openings of the gradebook share one database engine (``grader.classroom.gradebook_engines``): its
  compiled SQL and its connections serve every notebook;
* the start-up's imports (nbgrader, nbconvert, torch for the judge) run without the garbage collector, which
  spent a tenth of a second in every second among their objects, all of which live as long as the process; they
  are frozen, and collection turned back on, before nbgrader starts;
* with ``--scores FILE``, the scores of its students (all but the excluded ones) are read from the gradebook here,
  where nbgrader's API is already imported, and written to FILE as JSON: no other Python start for the table.

A student is recorded completely or not at all: before nbgrader starts on a student (its ``pre_convert_hook``),
that student's rows of the gradebook and its ``grader_results/`` are read; when the run is interrupted (Ctrl-C,
SIGINT) before the student is done (``post_convert_hook``), they are put back as they were, after nbgrader has
removed the student's ``autograded/`` folder as it does for a failed student. Each student done is logged as
``recorded: <student>``, and an interrupted run ends with ``interrupted: <student> left as before`` and exit
status 130 (``grader.classroom.course`` makes one line of them).

``--exclude FILE`` names students (a JSON list) nbgrader leaves out (``CourseDirectory.student_id_exclude``,
passed as configuration: a class's list may be longer than one command-line argument can be).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

STARTED = time.monotonic()


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" not in argv:
        raise SystemExit("usage: python -m grader.classroom.nbgrader_job [options] -- autograde ASSIGNMENT [...]")
    cut = argv.index("--")
    parser = argparse.ArgumentParser(prog="python -m grader.classroom.nbgrader_job")
    parser.add_argument("--root", type=Path, required=True, help="the course folder")
    parser.add_argument("--db-url", default=os.environ.get("GRADER_DB_URL", "").strip(),
                        help="the gradebook (nbgrader's CourseDirectory.db_url; default: GRADER_DB_URL, which keeps "
                             "a password off the command line)")
    parser.add_argument("--workers", type=int, default=0,
                        help="sandboxed workers of this process (0: one per core); passed to TrustedExecute")
    parser.add_argument("--no-early-pool", action="store_true",
                        help="do not start a local pool early (grading elsewhere, e.g. on a Dask cluster)")
    parser.add_argument("--exclude", type=Path, help="file of students to leave out, a JSON list")
    parser.add_argument("--scores", type=Path, help="write {student: {exercise: [score, max]}} there, as JSON")
    args = parser.parse_args(argv[:cut])
    if not args.db_url:
        parser.error("no gradebook: set GRADER_DB_URL (e.g. sqlite:///<course>/gradebook.db)")
    nbgrader_args = [*argv[cut + 1:], f"--CourseDirectory.root={args.root}"]  # (the gradebook: main, configuration)
    if args.workers:
        nbgrader_args.append(f"--TrustedExecute.workers={args.workers}")
    return args, nbgrader_args


def printable(text: str) -> str:
    from grader.classroom.untrusted import printable as written_out

    return written_out(text)


def log(text: str) -> None:
    """A line in nbgrader's log format (grader.classroom.course files it with nbgrader's INFO lines)."""
    print(f"[nbgrader_job | INFO] {text}", flush=True)


INTERRUPTED = 130  # exit status of an interrupted run (128 + SIGINT, as a shell reports it)


class Recording:
    """nbgrader's pre- and post-convert hooks: the student being recorded, and how its rows were before, to put
    them back if the run stops halfway through that student (see the module's docstring)."""

    def __init__(self, root: Path, db_url: str) -> None:
        self.root, self.db_url = root, db_url
        self.current: str | None = None  # the student nbgrader has started and not finished
        self.before: dict[str, Any] = {}
        self.recorded = 0

    def student_of(self, notebooks: list[str]) -> str:
        """The student of a submission (nbgrader passes its hooks the CourseDirectory's student_id, "*", and the
        submitted notebooks' paths: submitted/<student>/<assignment>/<notebook>.ipynb)."""
        return Path(notebooks[0]).parent.parent.name

    def start(self, assignment: str, student: str, notebooks: list[str], **_: Any) -> None:
        who = self.student_of(notebooks)
        try:
            before = {"rows": _student_rows(self.db_url, assignment, who),
                      "results": _results(self.root, assignment, who), "assignment": assignment}
        except Exception:  # (nbgrader logs it and goes on: an interruption then says it cannot put it back)
            self.current, self.before = who, {}
            raise
        self.current, self.before = who, before

    def done(self, assignment: str, student: str, notebooks: list[str], **_: Any) -> None:
        who = self.student_of(notebooks)
        self.current, self.before = None, {}
        self.recorded += 1
        log(f"recorded: {printable(who)}")

    def restore(self) -> str:
        """Put the current student back as before; "" when no student was halfway, else its id."""
        who = self.current
        if who is None:
            return ""
        if not self.before:
            raise RuntimeError("its rows could not be read before it was graded")
        _put_back(self.db_url, self.before["assignment"], who, self.before["rows"])
        _put_back_results(self.root, self.before["assignment"], who, self.before["results"])
        self.current = None
        return who


_RECORDING: Recording | None = None


def _put_back_interrupted(recording: Recording, db_url: str) -> None:
    """After Ctrl-C: the student nbgrader was halfway through put back as before, and one line saying so. A
    SQLite gradebook may still be locked by the session the interrupt cut short (a read or write transaction left
    open, seen once in CI as "database is locked"): that session is collected and the engines' connections closed
    first, and a locked database is tried again for a while."""
    import gc

    from grader.classroom import gradebook_engines
    from grader.classroom.untrusted import redact

    left, failure = recording.current or "", None
    for attempt in range(20):
        gc.collect()  # (the interrupted session, unreachable now: its connection closes, its transaction ends)
        gradebook_engines.dispose()
        try:
            left = recording.restore()
            failure = None
            break
        except Exception as exc:  # noqa: BLE001 (said below, with the student)
            failure = exc
            if "locked" not in str(exc):
                break
            time.sleep(0.5)
    if failure is not None:  # said, with the student: the gradebook needs a look
        print("[nbgrader_job | ERROR] " + redact(
            f"interrupted: {printable(left)} could not be put back as before in the gradebook "
            f"({type(failure).__name__}: {printable(failure)}); run make autograde FORCE=1 to grade it again", db_url),
            flush=True)
        return
    log(f"interrupted: {recording.recorded} students recorded" + (f", {printable(left)} left as before" if left else ""))


def _student_starts(**hook: Any) -> None:
    if _RECORDING is not None:
        _RECORDING.start(**hook)


def _student_done(**hook: Any) -> None:
    if _RECORDING is not None:
        _RECORDING.done(**hook)


def _columns(row: Any) -> dict[str, Any]:
    import sqlalchemy

    return {c.key: getattr(row, c.key) for c in sqlalchemy.inspect(row).mapper.column_attrs}


def _student_rows(db_url: str, assignment: str, student: str) -> dict[str, Any]:
    """{"student": bool, "submission": {id: columns} | {}, "notebooks", "grades", "comments": {id: columns}}."""
    from nbgrader.api import Assignment, Gradebook, Student, SubmittedAssignment

    with Gradebook(db_url) as gb:
        rows: dict[str, Any] = {"student": gb.db.query(Student).filter(Student.id == student).one_or_none() is not None}
        submission = (gb.db.query(SubmittedAssignment).join(Assignment)
                      .filter(Assignment.name == assignment, SubmittedAssignment.student_id == student).one_or_none())
        rows["submission"] = {} if submission is None else {submission.id: _columns(submission)}
        notebooks = [] if submission is None else list(submission.notebooks)
        rows["notebooks"] = {nb.id: _columns(nb) for nb in notebooks}
        rows["grades"] = {g.id: _columns(g) for nb in notebooks for g in nb.grades}
        rows["comments"] = {c.id: _columns(c) for nb in notebooks for c in nb.comments}
    return rows


def _put_back(db_url: str, assignment: str, student: str, before: dict[str, Any]) -> None:
    """The student's rows as ``before`` (_student_rows) held them: rows added since deleted, the others' columns
    written back; a student or submission that did not exist removed."""
    from nbgrader.api import Assignment, Gradebook, MissingEntry, SubmittedAssignment

    with Gradebook(db_url) as gb:
        gb.db.rollback()
        submission = (gb.db.query(SubmittedAssignment).join(Assignment)
                      .filter(Assignment.name == assignment, SubmittedAssignment.student_id == student).one_or_none())
        if not before["submission"]:
            if submission is not None:
                gb.remove_submission(assignment, student)
            if not before["student"]:
                try:
                    gb.remove_student(student)
                except MissingEntry:
                    pass
            gb.db.commit()
            return
        if submission is None:  # (nbgrader never deletes it: nothing to put back but the columns)
            return
        notebooks = list(submission.notebooks)
        now = {"submission": [submission], "notebooks": notebooks,
               "grades": [g for nb in notebooks for g in nb.grades],
               "comments": [c for nb in notebooks for c in nb.comments]}
        for kind in ("grades", "comments", "notebooks", "submission"):  # (children first, for deletions)
            for row in now[kind]:
                old = before[kind].get(row.id)
                if old is None:
                    gb.db.delete(row)
                    continue
                for key, value in old.items():
                    if getattr(row, key) != value:
                        setattr(row, key, value)
        gb.db.commit()


def _results(root: Path, assignment: str, student: str) -> dict[str, bytes]:
    from grader.classroom.report import RESULTS_DIR

    folder = root / RESULTS_DIR / assignment / student
    return {p.name: p.read_bytes() for p in folder.glob("*.json")} if folder.is_dir() else {}


def _put_back_results(root: Path, assignment: str, student: str, before: dict[str, bytes]) -> None:
    from grader.classroom.report import RESULTS_DIR

    folder = root / RESULTS_DIR / assignment / student
    if folder.is_dir():
        for path in folder.glob("*.json"):
            if path.name not in before:
                path.unlink()
    for name, data in before.items():
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)


def main(argv: list[str] | None = None) -> int:
    args, nbgrader_args = parse(list(sys.argv[1:] if argv is None else argv))
    from grader.classroom.untrusted import escape_log_arguments, redact

    os.environ["GRADER_DB_URL"] = args.db_url  # (what nbgrader_config.py gives nbgrader, and this process's logs hide)
    escape_log_arguments(secrets=[args.db_url])
    if not args.no_early_pool:
        from grader.isolation import pool, sandbox

        pool.start_early(sandbox.course_hidden(args.root, args.db_url), args.workers or None)
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]  # (see the module's docstring)
    gc.disable()  # (see the module's docstring) until what this process imports is frozen

    from traitlets.config import Config

    config = Config()
    excluded: list[str] = []
    if args.exclude:
        excluded = [str(s) for s in json.loads(args.exclude.read_text(encoding="utf-8"))]
        config.CourseDirectory.student_id_exclude = ",".join(excluded)
    config.CourseDirectory.db_url = args.db_url
    global _RECORDING
    recording = _RECORDING = Recording(args.root, args.db_url)
    config.Autograde.pre_convert_hook = _student_starts  # (functions: traitlets copies its configuration's values)
    config.Autograde.post_convert_hook = _student_done
    from nbgrader.apps.nbgraderapp import NbGraderApp

    from grader.classroom import gradebook_engines, nbgrader_plugins  # noqa: F401 (runner: torch and the judge, imported now)
    from grader.judge import runner  # noqa: F401 (runner: torch and the judge, imported now)

    gradebook_engines.share()
    gc.freeze()
    gc.enable()

    log(f"nbgrader and the judge imported at {time.monotonic() - STARTED:.2f} s (seconds after this process started)"
        + ("" if args.no_early_pool else "; the sandboxed workers were started at once"))
    code: int = 0
    try:
        NbGraderApp.launch_instance(argv=nbgrader_args, config=config)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except KeyboardInterrupt:  # (nbgrader removed the student's autograded/ folder, then let it through)
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not stop the putting back
        code = INTERRUPTED
        args.scores = None  # (no table: the parent says what to do); the student is put back below, once the
        # grading threads are stopped and the interrupted gradebook session is gone (its traceback held it here)
    finally:
        finished = time.monotonic()
        plugins = sys.modules.get("grader.classroom.plugins.trusted_execute")
        if plugins is not None:
            plugins._CLASSROOM.close()
        early = sys.modules["grader.isolation.pool"].EARLY_TIMES if "grader.isolation.pool" in sys.modules else {}
        if "ready" in early and "taken" in early:
            log(f"sandboxed workers started at {early['started'] - STARTED:.2f} s, ready at "
                f"{early['ready'] - STARTED:.2f} s, asked for by nbgrader at {early['taken'] - STARTED:.2f} s "
                "(seconds after this process started)")
        log(f"nbgrader finished {finished - STARTED:.2f} s after this process started, having used {time.process_time():.2f} s "
            f"of CPU (its threads included); sandboxed workers closed in {time.monotonic() - finished:.2f} s")
    if code == INTERRUPTED:
        _put_back_interrupted(recording, args.db_url)
    if args.scores:
        from grader.classroom.gradebook import gradebook_scores

        read = time.monotonic()
        try:
            table = gradebook_scores(args.db_url, _assignment(nbgrader_args), leave_out=set(excluded))
        except Exception as exc:  # the run's own errors are in the log; the table is not there
            log(redact(f"the scores could not be read from the gradebook: {type(exc).__name__}: {exc}", args.db_url))
        else:
            tmp = args.scores.with_name(args.scores.name + ".tmp")
            tmp.write_text(json.dumps(table), encoding="utf-8")
            os.replace(tmp, args.scores)
            log(f"scores of {len(table)} students read from the gradebook in {time.monotonic() - read:.2f} s")
    gradebook_engines.dispose()
    return code


def _assignment(nbgrader_args: list[str]) -> str:
    positional = [a for a in nbgrader_args if not a.startswith("-")]
    return positional[1] if len(positional) > 1 else "autograd"


def exit_now(code: int) -> None:
    """Exit without Python's teardown of torch and nbgrader (a second or more, after the work is done and
    everything is closed and written)."""
    import logging

    pool = sys.modules.get("grader.isolation.pool")
    if pool is not None:
        pool.discard_early(wait=True)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
