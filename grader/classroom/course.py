"""Instructor tooling around nbgrader: the demo class, autograding, and the table of scores per student and exercise.

    python -m grader.course demo        release, build the example class, autograde it with nbgrader, feedback, table
    python -m grader.course autograde   nbgrader autograde of submitted/ (the gradebook created first if missing), table
    python -m grader.course autograde --jobs 4   the same in 4 nbgrader processes over disjoint groups of students,
                                        sharing one PostgreSQL gradebook (GRADER_DB_URL)
    python -m grader.course scores      the table of the course in the current directory (after autograding)

nbgrader's own output goes to <course>/nbgrader.log (named at the end; with several processes, one
nbgrader-job<N>.log each); the terminal gets one line per stage, a progress bar over the notebooks while
autograding (plain lines when not a terminal), the table, where the files are, and one line for each warning or
error nbgrader reports.

Settings (environment variables; the Makefile's DB_URL and JOBS set them):

    GRADER_DB_URL   the gradebook, as nbgrader's CourseDirectory.db_url (nbgrader_config.py passes it to every
                    nbgrader command: feedback, export, formgrader); default sqlite:///<course>/gradebook.db
    GRADER_JOBS     nbgrader processes autograding at once (default 1); more than 1 needs a PostgreSQL gradebook

This module imports little (no torch, nbformat or nbgrader at import): `make autograde` starts nbgrader's
process at once, and reads nothing else that takes time before the first notebook.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.judge.testcells import exercise_of
from grader.classroom.untrusted import hide_password, printable, private_file, redact

ASSIGNMENT = "autograd"
REPO = Path(__file__).resolve().parents[2]  # grader/classroom/course.py
LOG_NAME = "nbgrader.log"  # in the course folder: nbgrader's full output, of the last command run


def say(text: str) -> None:
    print(text, flush=True)


# --- building submissions ------------------------------------------------------------------------


def strip_solution_markers(source: str) -> str:
    return "\n".join(line for line in source.split("\n") if "BEGIN SOLUTION" not in line and "END SOLUTION" not in line)


def answer_sources(solutions_dir: Path) -> dict[str, str]:
    """grade_id -> the instructor's answer, for every answer cell of every solutions notebook."""
    import nbformat

    answers: dict[str, str] = {}
    for path in sorted(solutions_dir.glob("*.ipynb")):
        for cell in nbformat.read(str(path), as_version=4).cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("solution") and cell.cell_type == "code":
                answers[meta["grade_id"]] = strip_solution_markers(cell.source)
    return answers


def mistake_source(path: Path) -> str:
    """A catalogued mistake as an answer cell: the code without its header comments."""
    lines = path.read_text(encoding="utf-8").split("\n")
    while lines and lines[0].startswith("# "):
        lines.pop(0)
    return "\n".join(lines).strip("\n")


def build_submission(release_dir: Path, answers: dict[str, str], out_dir: Path) -> None:
    """Copy the released notebooks to ``out_dir`` with the given answer cells filled in."""
    import nbformat

    out_dir.mkdir(parents=True, exist_ok=True)
    for path in sorted(release_dir.glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        for cell in nb.cells:
            grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            if grade_id in answers and cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
                cell.source = answers[grade_id]
        nbformat.write(nb, str(out_dir / path.name))


def class_answers(students_file: Path, solutions: dict[str, str], mistakes_dir: Path) -> dict[str, dict[str, str]]:
    """students.toml -> {student: {grade_id: answer source}}."""
    spec = tomllib.loads(students_file.read_text(encoding="utf-8"))
    result: dict[str, dict[str, str]] = {}
    for student, answers in spec.items():
        filled: dict[str, str] = {}
        if answers.get("all") == "solution":
            filled.update(solutions)
        for grade_id, value in answers.items():
            if grade_id == "all":
                continue
            if value == "solution":
                filled[grade_id] = solutions[grade_id]
            else:
                path = mistakes_dir / value
                if not path.is_file():
                    raise SystemExit(f"{students_file}: student {student!r} uses {value!r}, not found in {mistakes_dir}")
                filled[grade_id] = mistake_source(path)
        result[student] = filled
    return result


# --- scores --------------------------------------------------------------------------------------


def gradebook_scores(db_url: str, assignment: str = ASSIGNMENT,
                     leave_out: set[str] = frozenset()) -> dict[str, dict[str, tuple[float, float]]]:  # type: ignore[assignment]
    """{student: {exercise: (score, max)}} from nbgrader's gradebook (autograded scores, manual overrides applied),
    for every student of the gradebook but those in ``leave_out``."""
    from nbgrader.api import (Assignment, BaseCell, Gradebook, Grade, Notebook, Student, SubmittedAssignment,
                              SubmittedNotebook)

    # Two queries for the whole class (nbgrader's objects load each student's notebooks and grades lazily: about
    # 45 ms a student, 13 s for 300, after the last notebook); the scores are nbgrader's own Grade.score (manual
    # overrides and extra credit applied) and Grade.max_score, computed by the database.
    order = _cell_order(assignment)
    with Gradebook(db_url) as gb:
        submitted = dict(gb.db.query(SubmittedAssignment.student_id, SubmittedAssignment.id)
                         .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
                         .filter(Assignment.name == assignment))
        grades: dict[str, list[tuple[str, str, float, float]]] = {}
        for submission, notebook, cell, score, top in (
                gb.db.query(SubmittedAssignment.id, Notebook.name, BaseCell.name, Grade.score, Grade.max_score)
                .join(SubmittedNotebook, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
                .join(Notebook, SubmittedNotebook.notebook_id == Notebook.id)
                .join(Grade, Grade.notebook_id == SubmittedNotebook.id)
                .join(BaseCell, Grade.cell_id == BaseCell.id)
                .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
                .filter(Assignment.name == assignment)):
            grades.setdefault(submission, []).append((notebook, cell, float(score or 0), float(top or 0)))
        students = [student for (student,) in gb.db.query(Student.id).order_by(Student.last_name, Student.first_name)]
    table: dict[str, dict[str, tuple[float, float]]] = {}
    for student in students:  # nbgrader's order of students (Gradebook.students)
        if student in leave_out or student not in submitted:
            continue
        row: dict[str, tuple[float, float]] = {}
        # notebooks by name, their cells in the course's order, not the database's: PostgreSQL returns rows written
        # by several processes in any order, and the table's columns follow the first row
        for _, cell, score, top in sorted(grades.get(submitted[student], []),
                                          key=lambda g: (g[0], order.get(g[1], len(order)), g[1])):
            exercise = exercise_of(cell)
            so_far, most = row.get(exercise, (0.0, 0.0))
            row[exercise] = (so_far + score, most + top)
        table[student] = row
    return table


@functools.lru_cache(maxsize=None)
def _cell_order(assignment: str) -> dict[str, int]:
    """grade_id -> its position in the course (the notebooks of solutions/ by name, their cells in order)."""
    import nbformat

    order: dict[str, int] = {}
    for path in sorted((REPO / "solutions" / assignment).glob("*.ipynb")):
        for cell in nbformat.read(str(path), as_version=4).cells:
            grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            if grade_id and grade_id not in order:
                order[grade_id] = len(order)
    return order


def render_scores(table: dict[str, dict[str, tuple[float, float]]]) -> str:
    if not table:
        return "No autograded submissions in the gradebook yet."
    exercises: list[str] = []
    for row in table.values():
        exercises += [e for e in row if e not in exercises]
    header = ["student", *map(printable, exercises), "total"]
    rows = [header]
    for student in sorted(table):
        row = table[student]
        total = sum(s for s, _ in row.values())
        top = sum(m for _, m in row.values())
        rows.append([printable(student), *(f"{row[e][0]:g}/{row[e][1]:g}" if e in row else "-" for e in exercises),
                     f"{total:g}/{top:g}"])
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(r, widths))) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


# --- running nbgrader ----------------------------------------------------------------------------


def nbgrader_command(*args: str) -> list[str]:
    return [str(Path(sys.executable).with_name("nbgrader")), *args]


def nbgrader_env(db_url: str = "") -> dict[str, str]:
    """The environment for nbgrader: its own bin/ on PATH (it runs `alembic` when it creates a gradebook), and
    the gradebook ``db_url`` when given, as GRADER_DB_URL (nbgrader_config.py reads it): a database URL may hold
    a password, and a command line is readable by every user of the machine (ps, /proc/<pid>/cmdline), the
    environment only by the process's owner."""
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    if db_url:
        env["GRADER_DB_URL"] = db_url
    return env


class Progress:
    """Notebooks graded out of ``total``: tqdm's bar on a terminal; elsewhere (CI logs, pipes) a plain line at each
    quarter. ``write`` prints a line without breaking the bar."""

    def __init__(self, total: int, stream: Any = None, desc: str = "autograding", unit: str = "notebook",
                 done: str = "notebooks graded") -> None:
        self.total, self.done, self.started = total, 0, time.monotonic()
        self.said = done
        self.stream = stream or sys.stdout
        self.bar: Any = None
        self.quarter = 1
        if total and self.stream.isatty():
            from tqdm import tqdm

            size = shutil.get_terminal_size()  # (80 × 24 where a terminal reports no size: tqdm would hide the bar)
            self.bar = tqdm(total=total, unit=unit, file=self.stream, leave=False, ncols=min(100, size.columns),
                            nrows=size.lines,
                            desc=f"    {desc}", bar_format="{desc} {n_fmt}/{total_fmt} |{bar}| {elapsed}<{remaining}")

    def advance(self) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)
            return
        if self.total and self.done < self.total and 4 * self.done >= self.quarter * self.total:
            self.write(f"    {self.done}/{self.total} {self.said} ({time.monotonic() - self.started:.0f} s)")
            while 4 * self.done >= self.quarter * self.total:
                self.quarter += 1

    def shrink(self, notebooks: int) -> None:
        """``notebooks`` fewer to grade (a student nbgrader leaves as autograded before)."""
        self.total = max(self.done, self.total - notebooks)
        if self.bar is not None:
            self.bar.total = self.total
            self.bar.refresh()

    def write(self, text: str) -> None:
        if self.bar is not None:
            self.bar.write(text, file=self.stream)
        else:
            print(text, file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


_LOG_LINE = re.compile(r"\[(\w+) \| (DEBUG|INFO|WARNING|ERROR|CRITICAL)\] ?(.*)")
_GRADED = re.compile(r"[^/\s]+/[^/\s]+/[^/\s]+: [\d.]+/[\d.]+ points \(trusted grading")
_FEEDBACK_PAGE = re.compile(r"Writing \d+ bytes to .*\.html$")  # generate_feedback, one line per page written
_PY_WARNING = re.compile(r"\S.*:\d+: (\w*Warning): (.*)")
# nbgrader's lines counted, not relayed one by one (its log keeps them): --force's per student, and what an
# interrupted student leaves (said in one line at the end)
_REMOVED = "Removing existing assignment: "
_SKIPPED = "Skipping existing assignment: "
_INTERRUPTED = re.compile(r"interrupted: \d+ students recorded(?:, (.*) left as before)?$")
# nbgrader's INFO lines the terminal gets too (not problems): where the class is graded when it is not this machine
_SHOWN_INFO = ("grading on the Dask cluster at ",)


@dataclass
class Job:
    """One nbgrader process of an autograde run: its command, its students and its log."""

    label: str  # "" for the only one; else "job 2/4"
    command: list[str]
    log: Path
    students: list[str] = field(default_factory=list)
    returncode: int = 0
    last: str = ""  # its last line of output
    errors: list[str] = field(default_factory=list)  # its warnings and errors, as relayed
    process: Any = None


class Interrupted(Exception):
    """Ctrl-C (SIGINT) stopped a run; every nbgrader process has ended, each having put back the student it was
    halfway through (grader.classroom.nbgrader_job)."""


class Nbgrader:
    """Runs nbgrader commands for the course in ``root`` (with the repository's nbgrader_config.py). Their whole
    output goes to ``log``; the terminal gets only each warning and error, one line each."""

    def __init__(self, root: Path, log: Path | None = None, db_url: str = "") -> None:
        self.root = root
        self.db_url = db_url  # given to every command when set, in its environment (else nbgrader's configuration decides)
        self.log = log or root / LOG_NAME
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with private_file(self.log):  # (0600: what nbgrader and the gradebook's driver say is for the instructor)
            pass
        self.problems: list[str] = []
        self.quiet: set[str] = set()  # warnings said already, in the terminal's own words: kept to the log
        self.notebooks_of: dict[str, int] = {}  # student -> notebooks to grade (for the progress)
        self.recorded: list[str] = []  # students recorded completely (grader.classroom.nbgrader_job's post-convert hook)
        self.skipped: list[str] = []  # students nbgrader left as autograded before
        self.removed = 0  # --force: students whose earlier autograded folder nbgrader removed
        self.left_halfway: list[str] = []  # interrupted: students put back as before
        self.interrupted = False

    def shown(self, text: str) -> str:
        """A line of nbgrader's output as the terminal and the log get it: control characters and ANSI escapes
        written out, the gradebook's password hidden."""
        return printable(redact(text, self.db_url, os.environ.get("GRADER_DB_URL", "").strip()))

    def run(self, args: list[str], total: int = 0, progress: dict[str, str] | None = None) -> tuple[int, int, float]:
        """(exit status, notebooks graded, seconds); with ``total``, a progress bar over that many notebooks (or
        what ``progress`` says: Progress's desc, unit and done)."""
        command = nbgrader_command(*args, f"--CourseDirectory.root={self.root}")  # (the gradebook: nbgrader_env)
        job = Job("", command, self.log)
        graded, seconds = self.run_jobs([job], total, append=True, progress=progress)
        return job.returncode, graded, seconds

    def run_jobs(self, jobs: list[Job], total: int = 0, append: bool = False,
                 progress: dict[str, str] | None = None) -> tuple[int, float]:
        """Run the jobs' processes at once, each writing its log, with one progress bar over all of them (and
        ``total`` notebooks); (notebooks graded, seconds). Each job's exit status is in ``job.returncode``."""
        started = time.monotonic()
        progress = Progress(total, **(progress or {}))  # type: ignore[arg-type]
        lock = threading.Lock()
        try:
            threads = [threading.Thread(target=self._follow, args=(job, progress, lock, append, started), daemon=True)
                       for job in jobs]
            self._wait(jobs, threads)
        finally:
            progress.close()
        if self.interrupted:
            raise Interrupted()
        for job in jobs:
            if job.returncode != 0 and not job.errors and job.last:
                line = f"error: {job.label + ': ' if job.label else ''}{job.last}"
                self.problems.append(line)
                say(f"    {line}")
        return progress.done, time.monotonic() - started

    def _wait(self, jobs: list[Job], threads: list[threading.Thread]) -> None:
        """Start the jobs' threads and wait for them. Ctrl-C (SIGINT) is noted, not raised (a KeyboardInterrupt in
        Thread.join leaves the thread marked as ended on Python 3.11): the nbgrader processes put back the students
        they were recording and end, and are waited for. A Ctrl-C at the terminal reached them too (one process
        group); a SIGINT sent to this process alone is passed on to them after 5 s."""
        import signal

        interrupted: list[float] = []

        def note(signum: int, frame: Any) -> None:
            self.interrupted = True
            interrupted.append(time.monotonic())

        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, note) if main else None
        try:
            for thread in threads:
                thread.start()
            passed_on = False
            while any(thread.is_alive() for thread in threads):
                for thread in threads:
                    thread.join(0.2)
                if interrupted and not passed_on and time.monotonic() - interrupted[0] > 5:
                    passed_on = True
                    for job in jobs:
                        if job.process is not None and job.process.poll() is None:
                            job.process.send_signal(signal.SIGINT)
        finally:
            if main:
                signal.signal(signal.SIGINT, previous)

    def _follow(self, job: Job, progress: "Progress", lock: threading.Lock, append: bool, started: float) -> None:
        prefix = f"{job.label}: " if job.label else ""
        with private_file(job.log, "a" if append else "w") as log:
            log.write("$ " + self.shown(" ".join(job.command)) + "\n")
            log.flush()
            try:
                process = subprocess.Popen(job.command, cwd=REPO, env=nbgrader_env(self.db_url), stdin=subprocess.DEVNULL,
                                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                           errors="replace", bufsize=1)
            except OSError as exc:
                job.returncode, job.last = 127, f"could not start {job.command[0]}: {exc}"
                return
            job.process = process
            assert process.stdout is not None
            for line in process.stdout:
                line = self.shown(line.rstrip("\n"))
                log.write(line + "\n")
                log.flush()  # (tail -f nbgrader.log follows the run)
                job.last = line.strip() or job.last
                kind, text = self._classify(line)
                if not kind:
                    continue
                with lock:
                    if kind == "graded":
                        progress.advance()
                    elif kind == "recorded":
                        self.recorded.append(text)
                    elif kind == "skipped":
                        student = Path(text).parent.name
                        self.skipped.append(student)
                        progress.shrink(self.notebooks_of.get(student, 0))
                    elif kind == "removed":
                        self.removed += 1
                    elif kind == "interrupted":
                        self.interrupted = True
                        if text:
                            self.left_halfway.append(text)
                    elif kind == "note":
                        progress.write(f"    {prefix}{text}")
                    elif (self.interrupted and not text.startswith("interrupted:")) or text in self.quiet:
                        continue  # (interrupted: nbgrader's "Removing failed assignment", "Canceled": said at the end)
                    else:
                        job.errors.append(f"{kind}: {text}")
                        self.problems.append(f"{kind}: {prefix}{text}")
                        progress.write(f"    {kind}: {prefix}{text}")
            job.returncode = process.wait()
            log.write(f"(exit status {job.returncode}, {time.monotonic() - started:.1f} s)\n\n")

    @staticmethod
    def _classify(line: str) -> tuple[str, str]:
        """("graded" | "note" | "warning" | "error" | "", text) for one line of nbgrader's output ("graded": a
        notebook recorded, or a feedback page written: the progress)."""
        match = _LOG_LINE.match(line)
        if match:
            level, text = match.group(2), match.group(3).strip()
            if level == "INFO" and (_GRADED.match(text) or _FEEDBACK_PAGE.match(text)):
                return "graded", text
            if match.group(1) == "nbgrader_job" and text.startswith("recorded: "):
                return "recorded", text.removeprefix("recorded: ")
            stopped = _INTERRUPTED.match(text) if match.group(1) == "nbgrader_job" else None
            if stopped:
                return "interrupted", stopped.group(1) or ""
            if level == "INFO" and text.startswith(_SKIPPED):
                return "skipped", text.removeprefix(_SKIPPED)
            if level == "WARNING" and text.startswith(_REMOVED):
                return "removed", text.removeprefix(_REMOVED)
            if level == "INFO" and text.startswith(_SHOWN_INFO):
                return "note", text
            if level == "WARNING":
                return "warning", text
            if level in ("ERROR", "CRITICAL") and not text.startswith("Traceback"):
                return "error", text
            return "", text
        warning = _PY_WARNING.match(line)
        if warning:  # a Python warning nbgrader's process did not expect (the harmless ones are silenced there)
            return "warning", f"{warning.group(1)}: {warning.group(2)}"
        return "", line

    def stage(self, args: list[str], what: str, total: int = 0) -> tuple[int, float]:
        """Run one stage that must succeed: (notebooks graded, seconds); else stop, naming the log."""
        returncode, graded, seconds = self.run(args, total)
        if returncode != 0:
            raise SystemExit(f"nbgrader {args[0]} failed (exit status {returncode}) while {what}; "
                             f"its full log: {self.log}")
        return graded, seconds


def nbgrader(args: list[str], root: Path) -> None:
    """Run an nbgrader command for the course in ``root``; its output goes to <root>/nbgrader.log."""
    Nbgrader(root).stage(args, "running it")


# --- the gradebook -------------------------------------------------------------------------------


def gradebook_url(root: Path) -> str:
    """The course's gradebook: GRADER_DB_URL, else nbgrader's default, <course>/gradebook.db (SQLite)."""
    return os.environ.get("GRADER_DB_URL", "").strip() or f"sqlite:///{Path(root).resolve() / 'gradebook.db'}"


def shown_url(db_url: str) -> str:
    """The URL without its password, to print (SQLAlchemy's own rendering, hide_password=True)."""
    return printable(hide_password(db_url))


def is_sqlite(db_url: str) -> bool:
    return db_url.startswith("sqlite:")


class GradebookUnreachable(Exception):
    """The gradebook's database cannot be reached; str() says why."""


def gradebook_notebooks(db_url: str, assignment: str = ASSIGNMENT) -> list[str]:
    """The assignment's notebooks in the gradebook; [] when there is no gradebook or it lacks the assignment.
    Read with SQL (sqlite3, or SQLAlchemy for a server): importing nbgrader here would cost a second."""
    return _gradebook_column(db_url, assignment, "SELECT notebook.name FROM notebook JOIN assignment ON "
                             "notebook.assignment_id = assignment.id WHERE assignment.name = :name ORDER BY notebook.name",
                             "notebook")


def gradebook_students(db_url: str, assignment: str = ASSIGNMENT) -> set[str]:
    """The students the gradebook holds a submission of the assignment of (nbgrader's SubmittedAssignment)."""
    return set(_gradebook_column(db_url, assignment, "SELECT submitted_assignment.student_id FROM submitted_assignment "
                                 "JOIN assignment ON submitted_assignment.assignment_id = assignment.id "
                                 "WHERE assignment.name = :name", "submitted_assignment"))


def _gradebook_column(db_url: str, assignment: str, query: str, table: str) -> list[str]:
    if is_sqlite(db_url):
        import sqlite3

        path = db_url.removeprefix("sqlite:///").split("?", 1)[0]
        if not path or not Path(path).is_file():
            return []
        try:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                return [row[0] for row in db.execute(query, {"name": assignment})]
            finally:
                db.close()
        except sqlite3.Error:
            return []  # not a gradebook yet (nbgrader creates its tables)
    import sqlalchemy
    from sqlalchemy.exc import SQLAlchemyError

    try:
        engine = sqlalchemy.create_engine(db_url)
    except Exception as exc:  # an unknown driver or a malformed URL
        raise GradebookUnreachable(redact(f"{type(exc).__name__}: {exc}", db_url)) from None
    try:
        with engine.connect() as db:
            if not sqlalchemy.inspect(db).has_table(table):
                return []
            return [row[0] for row in db.execute(sqlalchemy.text(query), {"name": assignment})]
    except SQLAlchemyError as exc:
        raise GradebookUnreachable(redact(" ".join(str(getattr(exc, "orig", None) or exc).split()), db_url)) from None
    finally:
        engine.dispose()


def ensure_gradebook(runner: Nbgrader, assignment: str = ASSIGNMENT) -> list[str]:
    """The assignment's notebooks, after putting the assignment in the gradebook if it is not there (a fresh
    clone has no gradebook.db, a new PostgreSQL database no tables): nbgrader generate_assignment from
    solutions/ records the source cells and their checksums, writing its release into a temporary folder, so
    notebooks/ (committed) is left as it is. Done once, before any autograde process starts."""
    root = runner.root
    db_url = runner.db_url or gradebook_url(root)
    try:
        notebooks = gradebook_notebooks(db_url, assignment)
    except GradebookUnreachable as why:
        raise SystemExit(f"cannot reach the gradebook {shown_url(db_url)}: {why}") from None
    if notebooks:
        return notebooks
    with tempfile.TemporaryDirectory(prefix="release-") as release:
        _, seconds = runner.stage(["generate_assignment", assignment, f"--CourseDirectory.release_directory={release}"],
                                  "creating the gradebook")
    notebooks = gradebook_notebooks(db_url, assignment)
    where = root / "gradebook.db" if db_url == gradebook_url(root) and is_sqlite(db_url) else shown_url(db_url)
    say(f"gradebook: {where} {'created' if is_sqlite(db_url) else 'given the assignment'} from "
        f"solutions/{assignment}/ ({len(notebooks)} notebooks; notebooks/ left as committed) ({seconds:.0f} s)")
    return notebooks


# --- autograding a course ------------------------------------------------------------------------


def submissions(root: Path, assignment: str = ASSIGNMENT) -> dict[str, list[Path]]:
    """student -> the .ipynb files in submitted/<student>/<assignment>/."""
    found: dict[str, list[Path]] = {}
    for folder in sorted((root / "submitted").glob(f"*/{assignment}")):
        if folder.is_dir():
            found[folder.parent.name] = sorted(folder.glob("*.ipynb"))
    return found


def _same_name(name: str) -> str:
    """A file or folder name as a browser, a zip tool or a student may have changed it: case, a download's
    " (1)", "Copy of ", "- Copy", separators."""
    name = re.sub(r"\s*\(\d+\)\s*$", "", name.casefold())
    name = re.sub(r"^copy of\s+|[\s_-]+copy(\s*\d+)?$", "", name)
    return re.sub(r"[^0-9a-z]", "", name)


def misplaced(root: Path, assignment: str, notebook_names: set[str]) -> dict[str, str]:
    """student -> one line saying where their notebooks are instead of submitted/<student>/<assignment>/ and
    what to do, for each student folder without that folder: a folder named as the assignment but for case or a
    copy's suffix (Autograd/, "autograd (1)/"), a folder of another name holding the assignment's notebooks, or
    the notebooks directly in submitted/<student>/. Other assignments' folders are not this assignment's."""
    said: dict[str, str] = {}
    others = {p.name for p in (root / "solutions").glob("*") if p.is_dir()} - {assignment}
    for student_dir in sorted((root / "submitted").glob("*")):
        if not student_dir.is_dir() or (student_dir / assignment).is_dir():
            continue
        student, where = student_dir.name, f"submitted/{printable(student_dir.name)}"
        for folder in sorted(p for p in student_dir.iterdir() if p.is_dir() and p.name not in others):
            names = {f.name for f in folder.glob("*.ipynb")}
            if _same_name(folder.name) == _same_name(assignment) or names & notebook_names:
                said[student] = (f"{where}/{printable(folder.name)}/ is not the assignment's folder "
                                 f"({len(names)} notebooks): rename it to {where}/{assignment}/")
                break
        else:
            loose = {f.name for f in student_dir.glob("*.ipynb")}
            if loose & notebook_names:
                said[student] = (f"its notebooks are in {where}/ itself ({len(loose)} notebooks): move them into "
                                 f"{where}/{assignment}/")
    return said


def rename_hint(name: str, missing: set[str]) -> str:
    """The released name a submitted file's name is a copy of (among the notebooks the student lacks), or ""."""
    stem = _same_name(name.removesuffix(".ipynb"))
    matches = [known for known in sorted(missing) if _same_name(known.removesuffix(".ipynb")) == stem]
    return matches[0] if matches else ""


def jobs_setting() -> int:
    """GRADER_JOBS (default 1): nbgrader processes autograding at once."""
    value = os.environ.get("GRADER_JOBS", "").strip() or "1"
    if not value.isdigit() or int(value) < 1:
        raise SystemExit(f"GRADER_JOBS={value!r}: give a number of nbgrader processes, 1 or more")
    return int(value)


def split_class(notebooks: dict[str, int], jobs: int) -> list[list[str]]:
    """Disjoint groups of students, as many as ``jobs`` (fewer when there are fewer students), balanced by their
    number of notebooks: each student, in nbgrader's order, joins the group with the fewest notebooks so far
    (so every group starts near the top of the class)."""
    groups: list[list[str]] = [[] for _ in range(max(1, min(jobs, len(notebooks))))]
    load = [0] * len(groups)
    for student in sorted(notebooks):
        lightest = min(range(len(groups)), key=lambda i: (load[i], i))
        groups[lightest].append(student)
        load[lightest] += notebooks[student]
    return groups


def worker_shares(cores: int, jobs: int) -> list[int]:
    """Sandboxed workers per local process: the cores shared out, at least one each."""
    return [max(1, cores // jobs + (1 if i < cores % jobs else 0)) for i in range(jobs)]


REFUSE_SQLITE = ("{jobs} nbgrader processes cannot share the SQLite gradebook {url}: SQLite takes one writer at a "
                 "time. Give a PostgreSQL gradebook in GRADER_DB_URL (postgresql+psycopg://user@host/database; a "
                 "local one for trying: python -m grader.postgres start), or use JOBS=1.")


def autograde(root: Path, assignment: str = ASSIGNMENT, force: bool = False, jobs: int | None = None,
              db_url: str | None = None, workers: int = 0) -> int:
    """`make autograde`: nbgrader autograde of everything in submitted/, with progress, then the table.

    With ``jobs`` > 1 (default: GRADER_JOBS, else 1), that many nbgrader processes autograde disjoint groups of
    students at once, writing one gradebook, which must then be a database server's (``db_url``, default:
    GRADER_DB_URL): SQLite is refused. ``workers``: sandboxed workers per process (default: the cores shared
    out, or TrustedExecute's configuration with one process).

    What is left out is said, one line each, and counted at the end: a student folder without the assignment's
    folder (misnamed), a notebook under a name the assignment does not have (renamed). One run at a time per
    course (``course_lock``); Ctrl-C leaves every student recorded completely or as before (exit status 130)."""
    root = root.resolve()
    db_url = db_url or gradebook_url(root)
    jobs = jobs or jobs_setting()
    if (root / "solutions").is_dir() and not (root / "solutions" / assignment).is_dir() \
            and not _reached(gradebook_notebooks, db_url, assignment):
        found = sorted(p.name for p in (root / "solutions").glob("*") if p.is_dir())
        raise SystemExit(f"no assignment {printable(assignment)!r} in this course: {root / 'solutions'}/"
                         f"{printable(assignment)}/ does not exist (its assignments: {', '.join(found) or 'none'}); "
                         f"give one of them (make autograde ASSIGNMENT=...), nothing was graded")
    fresh_bytecode()
    handed_in = submissions(root, assignment)
    released = {p.name for p in (root / "solutions" / assignment).glob("*.ipynb")}
    elsewhere = misplaced(root, assignment, released)
    for student, line in elsewhere.items():
        say(f"    warning: {printable(student)} left out: {line}, then run make autograde again")
    if not any(handed_in.values()):
        say(f"Nothing to grade: no notebooks in {root / 'submitted'}/<student>/{assignment}/ "
            "(nbgrader collect puts them there, or copy them in).")
        return 0
    broken = [student for student in handed_in if "\n" in student or "\r" in student]
    if broken:  # nbgrader matches submitted/<student>/ with a regex whose .* stops at a line break: it would stop
        # the whole class with "Could not match" after its start-up
        raise SystemExit(f"nbgrader cannot grade a student id holding a line break: {root / 'submitted'}/"
                         f"{printable(broken[0])}/ (shown escaped){f' and {len(broken) - 1} more' if len(broken) > 1 else ''}"
                         "; rename that folder to the student's id, then run autograde again (nothing was graded)")
    if jobs > 1 and is_sqlite(db_url):
        raise SystemExit(REFUSE_SQLITE.format(jobs=jobs, url=shown_url(db_url)))
    with course_lock(root):
        return _autograde_locked(root, assignment, force, jobs, db_url, workers, handed_in, len(elsewhere))


def _reached(query: Any, db_url: str, assignment: str) -> Any:
    try:
        return query(db_url, assignment)
    except GradebookUnreachable as why:
        raise SystemExit(f"cannot reach the gradebook {shown_url(db_url)}: {why}") from None


def _autograde_locked(root: Path, assignment: str, force: bool, jobs: int, db_url: str, workers: int,
                      handed_in: dict[str, list[Path]], folders_left_out: int) -> int:
    runner = Nbgrader(root, db_url=db_url)
    try:
        notebooks = ensure_gradebook(runner, assignment)
    except Interrupted:
        say("interrupted while the gradebook was being created: nothing was graded; run make autograde again")
        return 130
    known = {f"{name}.ipynb" for name in notebooks}
    skipped = []
    files_left_out = 0
    for student, files in handed_in.items():
        folder = f"submitted/{printable(student)}/{assignment}"
        unknown = [f for f in files if f.name not in known]
        if not any(f.name in known for f in files):
            found = ", ".join(printable(f.name) for f in files) or "no .ipynb file"
            say(f"    warning: {printable(student)} not graded: {folder}/ holds no notebook of "
                f"{assignment} ({found}; expected {', '.join(sorted(known))})")
            skipped.append(student)
            continue
        missing = known - {f.name for f in files}
        for f in unknown:
            files_left_out += 1
            hint = rename_hint(f.name, missing)
            if hint:
                runner.quiet |= {runner.shown(f"No submitted file: {root / 'submitted' / student / assignment / hint}")}
                what = f"not a notebook of {assignment}: rename it to {hint} (nbgrader scores that notebook 0 meanwhile)"
            elif rename_hint(f.name, known):
                what = f"a second copy of {rename_hint(f.name, known)}, which is graded; remove it"
            else:
                what = f"not a notebook of {assignment} (its notebooks: {', '.join(sorted(known))})"
            runner.quiet |= {runner.shown(f"Skipping unknown notebook: {f}")}
            say(f"    warning: {printable(student)}: {folder}/{printable(f.name)} left out: {what}")
    counts = {student: sum(1 for f in files if f.name in known) for student, files in handed_in.items()
              if student not in skipped}
    runner.notebooks_of = counts
    total = sum(counts.values())
    if not force and counts:
        _forget_ungraded(root, assignment, db_url, counts)
    groups = split_class(counts, jobs) if counts else []
    say(f"autograde: {len(counts)} students, {total} notebooks, each in a sandbox; "
        + ("nbgrader records them one by one" if len(groups) <= 1 else
           f"{len(groups)} nbgrader processes record them, sharing the gradebook {shown_url(db_url)}"))
    with tempfile.TemporaryDirectory(prefix="autograde-") as scratch:
        try:
            run = _autograde_jobs(runner, assignment, force, groups, skipped, list(handed_in), total, Path(scratch),
                                  workers)
        except Interrupted:
            halfway = ", ".join(runner.left_halfway)
            say(f"interrupted: {len(runner.recorded)} students recorded, "
                + (f"{halfway} left as before" if halfway else "no student halfway")
                + "; run make autograde again")
            return 130
        _, seconds, failed = run if groups else (0, 0.0, [])
        left_before = sum(counts.get(s, 0) for s in runner.skipped)
        expected = total - left_before
        graded = sum(counts.get(s, 0) for s in runner.recorded)
        if failed and not runner.recorded:  # nbgrader stopped before recording anyone (e.g. the grading
            # environment could not start): its error line said what and what to do; no count, table or "failed
            # for some students"
            logs = runner.log if len(groups) <= 1 else f"{root}/nbgrader-job<N>.log (N = 1..{len(groups)})"
            say(f"nbgrader's full log: {logs}")
            return 1
        say(f"autograde: {graded}/{expected} notebooks graded ({seconds:.0f} s)"
            + (f"; {len(runner.skipped)} students ({left_before} notebooks) autograded before were left as they are "
               "(FORCE=1 grades them again)" if runner.skipped else "")
            + (f"; {expected - graded} could not be, see the errors above" if graded < expected else ""))
        table: dict[str, dict[str, tuple[float, float]]] | None = {}
        for number in range(1, len(groups) + 1):  # each process read its students' scores after recording them
            written = Path(scratch) / f"scores-{number}.json"
            if table is None or not written.is_file():
                table = None
                continue
            table.update({s: {e: (v[0], v[1]) for e, v in row.items()}
                          for s, row in json.loads(written.read_text(encoding="utf-8")).items()})
    if runner.removed:
        say(f"autograde: FORCE: the earlier autograded notebooks of {runner.removed} students were removed and "
            "graded again (nbgrader's \"Removing existing assignment\" lines: in its log)")
    if folders_left_out or files_left_out or skipped:
        parts = [f"{n} {what}" for n, what in ((folders_left_out, "student folder(s) misnamed"),
                                              (len(skipped), "student(s) with no notebook of the assignment"),
                                              (files_left_out, "notebook file(s) misnamed")) if n]
        say(f"left out: {', '.join(parts)} (named above): rename them as said, then run make autograde again")
    say("\n" + render_scores(table if table is not None else gradebook_scores(db_url, assignment)) + "\n")
    flagged = flag_line(root, assignment)
    if flagged:
        say(flagged)
    say(f"Autograded notebooks: {root / 'autograded'}/<student>/{assignment}/")
    problems = len(runner.problems) + len(skipped) + folders_left_out + files_left_out
    logs = runner.log if len(groups) <= 1 else f"{root}/nbgrader-job<N>.log (N = 1..{len(groups)})"
    say(f"nbgrader's full log: {logs}" + (f" ({problems} warning(s) or error(s) above)" if problems else ""))
    for job in failed:
        say(f"nbgrader autograde failed for some students{' in ' + job.label if job.label else ''} "
            f"(exit status {job.returncode}); see the lines above and its log: {job.log}")
    return 1 if failed else 0


def _forget_ungraded(root: Path, assignment: str, db_url: str, students: dict[str, int]) -> None:
    """nbgrader skips a student whose autograded/ folder is there (and not older than the submission), whatever
    the gradebook holds: after switching gradebooks (SQLite to PostgreSQL, a new database) it would grade nothing.
    The autograded folders of students the gradebook in use has no submission of are removed first (as --force
    does, for them only), so nbgrader grades them."""
    try:
        recorded = gradebook_students(db_url, assignment)
    except GradebookUnreachable:
        return  # (ensure_gradebook reached it a moment ago; nbgrader will say what goes wrong)
    stale = [s for s in students if s not in recorded and (root / "autograded" / s / assignment).exists()]
    for student in stale:
        _remove_tree(root / "autograded" / student / assignment)
    if stale:
        say(f"autograde: {len(stale)} students have autograded notebooks but no grades in the gradebook "
            f"{shown_url(db_url)} ({_names(stale)}): they are graded again")


def _remove_tree(folder: Path) -> None:
    """shutil.rmtree, through the read-only folders nbgrader leaves (its permissions, 444/555)."""
    import stat

    def writable(function: Any, path: str, _: Any) -> None:
        os.chmod(os.path.dirname(path), stat.S_IRWXU)
        if os.path.isdir(path):
            os.chmod(path, stat.S_IRWXU)
        function(path)

    shutil.rmtree(folder, onexc=writable) if sys.version_info >= (3, 12) else shutil.rmtree(folder, onerror=writable)


LOCK_NAME = "autograde.lock"  # in the course folder, while `make autograde` runs: who runs it


@contextlib.contextmanager
def course_lock(root: Path) -> Any:
    """One autograde at a time per course: filelock's flock on <course>/autograde.lock (released by the kernel
    when the process ends, however it ends), the holder's pid, host, user and start time written in it. A second
    run refuses in one line naming the holder; a file left by a run that ended without releasing (killed) is
    taken over with a note. nbgrader itself has no such lock."""
    import filelock
    import getpass
    import socket

    path = root / LOCK_NAME
    me = {"pid": os.getpid(), "host": socket.gethostname(), "user": _user(getpass),
          "started": time.strftime("%Y-%m-%d %H:%M:%S %z")}
    held: dict[str, Any] = {}

    def claim(fd: int) -> None:  # (filelock: with the lock held; the file is not truncated by a contender)
        held["fd"], held["before"] = fd, os.pread(fd, 4096, 0)
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(me) + "\n").encode(), 0)

    lock = filelock.FileLock(str(path), timeout=0, on_acquired=claim, fallback_to_soft=False)
    try:
        lock.acquire()
    except filelock.Timeout:
        holder = _holder(path)
        raise SystemExit(f"autograde is already running on this course, {holder} (lock: {path}): wait for it to "
                         "finish, then run make autograde again") from None
    try:
        before = _holder_of(held.get("before", b""))
        if before:
            say(f"note: an earlier autograde, {before}, ended without releasing its lock (killed?): taken over; "
                "students it was recording are graded again")
        yield
    finally:
        try:
            os.ftruncate(held["fd"], 0)  # (a lock file left empty: released properly)
        except (KeyError, OSError):
            pass
        lock.release()


def _user(getpass: Any) -> str:
    try:
        return str(getpass.getuser())
    except Exception:
        return str(os.getuid())


def _holder_of(data: bytes) -> str:
    """"pid 123 on host h, started ... by user" from a lock file's content; "" for an empty or unreadable one."""
    try:
        info = json.loads(data.decode("utf-8", "replace") or "null")
    except ValueError:
        return ""
    if not isinstance(info, dict) or "pid" not in info:
        return ""
    return (f"pid {printable(info.get('pid'))} on host {printable(info.get('host', '?'))}, started "
            f"{printable(info.get('started', '?'))} by {printable(info.get('user', '?'))}")


def _holder(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"by a process whose details cannot be read ({exc.strerror})"
    return "by " + (_holder_of(data) or "a process that is just starting")


def feedback(root: Path, assignment: str = ASSIGNMENT, force: bool = False) -> int:
    """`make feedback`: nbgrader generate_feedback for every autograded submission. nbgrader's log goes to
    <course>/nbgrader.log; the terminal gets a progress line over the pages, each warning or error nbgrader
    reports (one line each), and where the pages are."""
    root = root.resolve()
    autograded = sorted((root / "autograded").glob(f"*/{assignment}/*.ipynb"))
    if not autograded:
        say(f"No autograded submissions in {root / 'autograded'}/<student>/{assignment}/: run make autograde first.")
        return 0
    students = len({path.parent.parent.name for path in autograded})
    runner = Nbgrader(root)
    say(f"feedback: {students} students, {len(autograded)} autograded notebooks")
    returncode, written, seconds = runner.run(["generate_feedback", assignment, *(["--force"] if force else [])],
                                              len(autograded), {"desc": "feedback", "unit": "page",
                                                                "done": "feedback pages written"})
    problems = len(runner.problems)
    say(f"feedback: {written} pages written to {root / 'feedback'}/<student>/{assignment}/ ({seconds:.0f} s)"
        + ("" if written == len(autograded) or force else
           "; the others were written before (run with --force to write them again)"))
    say(f"nbgrader's full log: {runner.log}" + (f" ({problems} warning(s) or error(s) above)" if problems else ""))
    if returncode != 0:
        say(f"nbgrader generate_feedback failed (exit status {returncode}); see the lines above and its log: "
            f"{runner.log}")
        return 1
    return 0


def fresh_bytecode() -> None:
    """Write the grader package's bytecode (__pycache__) where it is missing or older than its source. Every process
    of a run imports the package (nbgrader's, each sandboxed worker, each notebook's child: grader.checks), and
    with PYTHONDONTWRITEBYTECODE set, or a checkout edited since `make install`, each compiled it from source again:
    0.2 s a process, 10 ms a notebook. Nothing is said when the folder is read-only: it only costs time then."""
    import compileall

    try:
        compileall.compile_dir(str(Path(__file__).resolve().parents[1]), quiet=2)  # grader/ and its layers
    except OSError:
        pass


def _autograde_jobs(runner: Nbgrader, assignment: str, force: bool, groups: list[list[str]], skipped: list[str],
                    everyone: list[str], total: int, scratch: Path, workers: int = 0) -> tuple[int, float, list[Job]]:
    """Start one nbgrader process per group (``python -m grader.nbgrader_job``), wait for all; (notebooks graded,
    seconds, the jobs that failed)."""
    root = runner.root
    on_cluster = bool(os.environ.get("GRADER_SCHEDULER", "").strip())  # a Dask cluster grades: no local pool
    if workers:
        shares = [workers] * len(groups)
    elif len(groups) > 1 and not on_cluster:
        shares = worker_shares(os.cpu_count() or 1, len(groups))
    else:
        shares = [0] * len(groups)
    jobs: list[Job] = []
    for number, (group, workers) in enumerate(zip(groups, shares), 1):
        members = set(group)
        exclude = scratch / f"exclude-{number}.txt"
        # (JSON: a student id may hold a newline)
        exclude.write_text(json.dumps([s for s in everyone if s not in members or s in skipped]), encoding="utf-8")
        command = [sys.executable, "-m", "grader.classroom.nbgrader_job", "--root", str(root),  # (the gradebook: nbgrader_env)
                   "--workers", str(workers), "--exclude", str(exclude),
                   *(["--no-early-pool"] if on_cluster else []),
                   "--scores", str(scratch / f"scores-{number}.json"),
                   "--", "autograde", assignment, *(["--force"] if force else [])]
        if len(groups) == 1:
            jobs.append(Job("", command, runner.log, group))
        else:
            jobs.append(Job(f"job {number}/{len(groups)}", command, root / f"nbgrader-job{number}.log", group))
    if len(jobs) > 1:
        for old in root.glob("nbgrader-job*.log"):
            old.unlink()
        with private_file(runner.log, "a") as log:
            for job in jobs:
                log.write(f"{job.label}: {len(job.students)} students ({_names(job.students)}); log: {job.log}\n")
    graded, seconds = runner.run_jobs(jobs, total, append=len(jobs) == 1)
    return graded, seconds, [job for job in jobs if job.returncode != 0]


def _names(students: list[str], shown: int = 5) -> str:
    return ", ".join(map(printable, students[:shown])) + (f", ... ({len(students) - shown} more)"
                                                          if len(students) > shown else "")


def demo(workdir: Path) -> int:
    """The main job on the bundled example class: release, autograde, feedback, table."""
    root = workdir.resolve()
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    os.symlink(REPO / "solutions", root / "solutions")
    runner = Nbgrader(root, db_url=f"sqlite:///{root / 'gradebook.db'}")  # its own, whatever GRADER_DB_URL says
    say(f"Demo course in {root} (instructor notebooks from {REPO / 'solutions'})")
    release = ["--CourseDirectory.release_directory=release"]
    _, seconds = runner.stage(["generate_assignment", ASSIGNMENT, "--force", *release], "releasing the assignment")
    say(f"1/4 release: student notebooks generated by nbgrader in {root / 'release'} ({seconds:.0f} s)")

    students = class_answers(REPO / "examples" / "students.toml", answer_sources(REPO / "solutions" / ASSIGNMENT),
                             REPO / "examples" / "mistakes")
    for student, answers in students.items():
        build_submission(root / "release" / ASSIGNMENT, answers, root / "submitted" / student / ASSIGNMENT)
    total = sum(len(files) for files in submissions(root).values())
    say(f"2/4 submissions: {len(students)} example students ({', '.join(students)}), {total} notebooks")

    say("3/4 autograde: nbgrader, every notebook in a sandbox, the class graded ahead on every core")
    graded, seconds = runner.stage(["autograde", ASSIGNMENT, "--force", *release], "autograding", total)
    say(f"    {graded}/{total} notebooks graded ({seconds:.0f} s)")
    _, seconds = runner.stage(["generate_feedback", ASSIGNMENT, "--force", *release], "writing feedback")
    from grader.classroom.report import build

    page = build(root, ASSIGNMENT, root / "reports")
    say(f"4/4 feedback: one HTML page per student and notebook, and the class report ({seconds:.0f} s)")

    say("\nScores per student and exercise (from nbgrader's gradebook):\n")
    say(render_scores(gradebook_scores(f"sqlite:///{root / 'gradebook.db'}")))
    say(f"\nFeedback:       {root / 'feedback'}/<student>/{ASSIGNMENT}/*.html")
    say(f"Class report:   {page} (and scores.csv, diagnoses.csv, flags.csv beside it)")
    flagged = flag_line(root, ASSIGNMENT)
    if flagged:
        say(flagged)
    problems = len(runner.problems)
    say(f"nbgrader's log: {runner.log}" + (f" ({problems} warning(s) or error(s) above)" if problems else ""))
    return 0


def course_root(db_url: str) -> Path:
    """The course folder of a SQLite gradebook (where grader_results/ and reports/ are); else the current one."""
    prefix = "sqlite:///"
    return Path(db_url[len(prefix):]).parent if db_url.startswith(prefix) else Path(".")


def flag_line(root: Path, assignment: str = ASSIGNMENT) -> str:
    from grader.classroom.report import flag_line as line

    return line(root, assignment)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m grader.course")
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="autograde the bundled example class in a scratch course directory")
    d.add_argument("--dir", type=Path, default=REPO / ".demo", help="scratch course directory (replaced)")
    a = sub.add_parser("autograde", help="nbgrader autograde of submitted/ (creating the gradebook if needed), then the table")
    a.add_argument("--root", type=Path, default=Path("."), help="course folder (default: the current one)")
    a.add_argument("--assignment", default=ASSIGNMENT,
                   help=f"the assignment, a folder of solutions/ (default: {ASSIGNMENT}); make autograde ASSIGNMENT=...")
    a.add_argument("--force", action="store_true",
                   help="autograde again the submissions autograded before (make autograde FORCE=1)")
    a.add_argument("--jobs", type=int, default=None,
                   help="nbgrader processes over disjoint groups of students (default: GRADER_JOBS, else 1); "
                        "more than 1 needs a PostgreSQL gradebook (GRADER_DB_URL or --db-url)")
    a.add_argument("--db-url", default=None,
                   help="the gradebook, as nbgrader's CourseDirectory.db_url (default: GRADER_DB_URL, else "
                        "sqlite:///<course>/gradebook.db)")
    a.add_argument("--workers", type=int, default=0,
                   help="sandboxed workers per nbgrader process (default: the cores shared out between them)")
    f = sub.add_parser("feedback", help="nbgrader generate_feedback for every autograded submission, with progress")
    f.add_argument("--root", type=Path, default=Path("."), help="course folder (default: the current one)")
    f.add_argument("--force", action="store_true", help="write again the pages written before")
    s = sub.add_parser("scores", help="print scores per student and exercise from a gradebook")
    s.add_argument("--db", default=os.environ.get("GRADER_DB_URL", "").strip() or "sqlite:///gradebook.db",
                   help="the gradebook's URL (default: GRADER_DB_URL, else sqlite:///gradebook.db)")
    s.add_argument("--root", type=Path, default=None,
                   help="course folder with grader_results/ (default: the gradebook's folder)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo(args.dir)
    if args.command == "feedback":
        return feedback(args.root, force=args.force)
    if args.command == "autograde":
        if args.jobs is not None and args.jobs < 1:
            parser.error("--jobs needs 1 or more")
        try:
            return autograde(args.root, args.assignment, force=args.force, jobs=args.jobs, db_url=args.db_url,
                             workers=args.workers)
        except KeyboardInterrupt:  # (before or after the nbgrader processes: nothing half-recorded)
            say("interrupted: run make autograde again")
            return 130
    say(render_scores(gradebook_scores(args.db)))
    flagged = flag_line(args.root or course_root(args.db))
    if flagged:
        say(flagged)
    return 0


if __name__ == "__main__":
    sys.exit(main())
