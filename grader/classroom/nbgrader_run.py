"""Running nbgrader's commands for the course: the command line, its environment (the gradebook passed, never on a
command line), its log (one per run, kept: <course>/logs/<date_time>-<command>.log, and <course>/nbgrader.log the
latest), a progress line over the notebooks, each warning naming its student, and the gradebook made when
missing."""

from __future__ import annotations

import glob
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from grader.classroom.folders import ASSIGNMENT, LOG_NAME, LOGS_DIR, REPO
from grader.classroom.gradebook import gradebook_notebooks, gradebook_url, GradebookUnreachable, is_sqlite, shown_url
from grader.classroom.untrusted import printable, private_file, private_folder, redact


def say(text: str) -> None:
    print(text, flush=True)


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


# --- the logs: one per run, all kept -------------------------------------------------------------------------------


_WHEN = "%Y-%m-%d_%H%M%S"  # a log's name starts with when its run started, local time: they sort by it


def _first_free(folder: Path, name: str, taken: Callable[[Path], bool] = Path.exists) -> Path:
    """``folder``/<name>.log, else <name>-2.log, -3, ...: the first that is not ``taken``."""
    for number in itertools.count(1):
        path = folder / f"{name}{'' if number == 1 else f'-{number}'}.log"
        if not taken(path):
            return path
    raise AssertionError("itertools.count never ends")


def run_log_path(root: Path, command: str, started: float | None = None) -> Path:
    """Where a run's log goes: <root>/logs/<date_time>-<command>.log (the run's start), a name no log there has
    yet, nor its processes' logs (-2, -3, ... after it for runs started in the same second)."""
    folder = root / LOGS_DIR
    stamp = time.strftime(_WHEN, time.localtime(time.time() if started is None else started))
    name = re.sub(r"[^\w.-]+", "_", command) or "nbgrader"
    return _first_free(folder, f"{stamp}-{name}",
                       lambda path: path.exists() or any(folder.glob(f"{glob.escape(path.stem)}-job*.log")))


def job_log_path(log: Path, number: int) -> Path:
    """The log of process ``number`` of a run of several (``log``: the run's): <log's name>-job<N>.log beside it."""
    return log.with_name(f"{log.stem}-job{number}.log")


def open_run_log(path: Path, latest: Path | None, mode: str = "a") -> Any:
    """``path`` opened for writing, 0600 (what nbgrader and the gradebook's driver say is for the instructor); with
    ``latest`` (<course>/nbgrader.log, nbgrader-job<N>.log), ``path`` is a run's log in logs/ (kept 0700) and
    ``latest`` becomes a link to it: the names the messages give stay true, every earlier run's log stays."""
    if latest is not None:
        private_folder(path.parent)
    handle = private_file(path, mode)
    if latest is not None:
        try:
            _link_latest(latest, path)
        except BaseException:
            handle.close()
            raise
    return handle


def _link_latest(latest: Path, path: Path) -> None:
    target = os.path.relpath(path, latest.parent)  # (relative: the course folder may move)
    if latest.is_symlink() and os.readlink(latest) == target:
        return
    retire_latest(latest)
    fresh = latest.with_name(f".{latest.name}.{os.getpid()}")
    fresh.unlink(missing_ok=True)
    os.symlink(target, fresh)
    os.replace(fresh, latest)  # (at once: a reader never finds no nbgrader.log)


def retire_latest(latest: Path) -> None:
    """``latest`` no longer names a run's log: a link is removed (its log stays in logs/); a file (the single
    nbgrader.log every command rewrote before logs/ existed) is moved into logs/, named by its last change."""
    if latest.is_symlink():
        latest.unlink()
    elif latest.exists():
        folder = latest.parent / LOGS_DIR
        private_folder(folder)
        when = time.strftime(_WHEN, time.localtime(latest.stat().st_mtime))
        os.replace(latest, _first_free(folder, f"{when}-{latest.stem}"))


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


_LATE = re.compile(r".* is [\d.]+ seconds late$")  # nbgrader's, per late submission, before an extension is applied


_INTERRUPTED = re.compile(r"interrupted: \d+ students recorded(?:, (.*) left as before)?$")


# nbgrader's INFO lines the terminal gets too (not problems): where the class is graded when it is not this machine
_SHOWN_INFO = ("grading on the Dask cluster at ",)


# nbgrader's INFO line before it works on a notebook: <folder>/<student>/<assignment>/<notebook>.ipynb (the student is
# "." for the instructor's folders: generate_assignment). Its warnings until the next such line are about that
# notebook, and many of them do not say so ("Attribute 'points' for cell X has changed!", "Cell with id 'X' exists
# multiple times!"): the terminal puts the notebook before them.
_WORKING_ON = re.compile(r"(?:Sanitizing|Autograding|Converting notebook) (.+)\.ipynb$")


# Warnings about the run, not the notebook being recorded when they are logged (the grader's own, from the threads
# that grade ahead or start workers): never put after a notebook.
_RUN_WIDE = ("grading ahead stopped ", "a sandboxed worker started after ", "a Dask worker of ", "a notebook: ")


@dataclass
class Job:
    """One nbgrader process of an autograde run: its command, its students and its log."""

    label: str  # "" for the only one; else "job 2/4"
    command: list[str]
    log: Path
    students: list[str] = field(default_factory=list)
    latest: Path | None = None  # the course's name for the latest such log (nbgrader.log), linked to ``log``
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

    def __init__(self, root: Path, log: Path | None = None, db_url: str = "", command: str = "") -> None:
        self.root = root
        self.db_url = db_url  # given to every command when set, in its environment (else nbgrader's configuration decides)
        self.command = command  # names the run's log (else the first nbgrader command run: generate_feedback, ...)
        self.started = time.time()
        self._log = log
        self.latest: Path | None = None if log else root / LOG_NAME  # linked to the run's log once it is written
        if log is not None:  # a log given is written as it is, from its start
            log.parent.mkdir(parents=True, exist_ok=True)
            with private_file(log):
                pass
        self.problems: list[str] = []
        self.quiet: set[str] = set()  # warnings said already, in the terminal's own words: kept to the log
        self.notebooks_of: dict[str, int] = {}  # student -> notebooks to grade (for the progress)
        self.recorded: list[str] = []  # students recorded completely (grader.classroom.nbgrader_job's post-convert hook)
        self.skipped: list[str] = []  # students nbgrader left as autograded before
        self.removed = 0  # --force: students whose earlier autograded folder nbgrader removed
        self.left_halfway: list[str] = []  # interrupted: students put back as before
        self.interrupted = False

    @property
    def log(self) -> Path:
        """This run's log: the one given, else <root>/logs/<date_time>-<command>.log, created with its first line
        (a run that starts no nbgrader process leaves none), <root>/nbgrader.log then linking to it."""
        if self._log is None:
            self._log = run_log_path(self.root, self.command or "nbgrader", self.started)
        return self._log

    def job_log(self, number: int) -> tuple[Path, Path | None]:
        """(its log, the course's name for the latest one: nbgrader-job<N>.log) of process ``number`` of a run of
        several."""
        return job_log_path(self.log, number), None if self.latest is None else self.root / f"nbgrader-job{number}.log"

    def logs_named(self, jobs: int) -> str:
        """How the end of a run names its logs: the run's log, or its processes' (``jobs`` of them)."""
        return str(self.log) if jobs <= 1 else f"{self.log.parent}/{self.log.stem}-job<N>.log (N = 1..{jobs})"

    def open_log(self, mode: str = "a") -> Any:
        """This run's log, opened for writing (``open_run_log``)."""
        return open_run_log(self.log, self.latest, mode)

    def shown(self, text: str) -> str:
        """A line of nbgrader's output as the terminal and the log get it: control characters and ANSI escapes
        written out, the gradebook's password hidden."""
        return printable(redact(text, self.db_url, os.environ.get("GRADER_DB_URL", "").strip()))

    def run_command(self, args: list[str], total: int = 0,
                    progress: dict[str, str] | None = None) -> tuple[int, int, float]:
        """(exit status, notebooks graded, seconds); with ``total``, a progress bar over that many notebooks (or
        what ``progress`` says: Progress's desc, unit and done)."""
        command = nbgrader_command(*args, f"--CourseDirectory.root={self.root}")  # (the gradebook: nbgrader_env)
        self.command = self.command or args[0]
        job = Job("", command, self.log, latest=self.latest)
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
        current = ""  # the notebook this process is working on, "student/assignment/notebook" ("": none)
        with open_run_log(job.log, job.latest, "a" if append else "w") as log:
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
                if kind == "working":
                    current = text
                    continue
                if not kind:
                    continue
                with lock:
                    if kind == "graded":
                        progress.advance()
                    elif kind == "recorded":
                        self.recorded.append(text)
                        current = ""
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
                        said = naming_the_notebook(text, current)
                        job.errors.append(f"{kind}: {text}")
                        self.problems.append(f"{kind}: {prefix}{said}")
                        progress.write(f"    {kind}: {prefix}{said}")
            job.returncode = process.wait()
            log.write(f"(exit status {job.returncode}, {time.monotonic() - started:.1f} s)\n\n")

    @staticmethod
    def _classify(line: str) -> tuple[str, str]:
        """("graded" | "note" | "warning" | "error" | "working" | "", text) for one line of nbgrader's output
        ("graded": a notebook recorded, or a feedback page written: the progress; "working": nbgrader starts on the
        notebook named "student/assignment/notebook" in ``text``, or "" for an instructor's notebook)."""
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
            working = _WORKING_ON.match(text) if level == "INFO" else None
            if working:
                return "working", _notebook_named(working.group(1))
            if level == "WARNING" and _LATE.match(text):
                return "", text  # (one line per late student at the end, from the gradebook: the extension counted)
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
        returncode, graded, seconds = self.run_command(args, total)
        if returncode != 0:
            raise SystemExit(f"nbgrader {args[0]} failed (exit status {returncode}) while {what}; "
                             f"its full log: {self.log}")
        return graded, seconds


def _notebook_named(path: str) -> str:
    """"student/assignment/notebook" for a submission's path without its .ipynb (nbgrader's <folder>/<student>/
    <assignment>/<notebook>), "" for the instructor's notebooks (their student is ".")."""
    parts = path.split("/")  # (not pathlib: it drops the "." that says there is no student)
    return "/".join(parts[-3:]) if len(parts) >= 4 and parts[-3] not in ("", ".") else ""


def naming_the_notebook(text: str, notebook: str) -> str:
    """A warning or error as the terminal says it: "ann/autograd/01_autograd_basics: <text>" when it was logged while
    nbgrader worked on that ``notebook`` and names no submission itself (student/assignment, as the grader's lines
    and nbgrader's paths do: this one, or another being graded ahead) nor is about the whole run; else ``text``."""
    if not notebook or text.startswith(_RUN_WIDE):
        return text
    student_and_assignment = notebook.rsplit("/", 1)[0]
    assignment = student_and_assignment.rsplit("/", 1)[-1]
    if student_and_assignment in text or re.search(rf"\S/{re.escape(assignment)}/\S", text):
        return text
    return f"{notebook}: {text}"


def nbgrader(args: list[str], root: Path) -> None:
    """Run an nbgrader command for the course in ``root``; its output goes to its own log in <root>/logs/
    (<root>/nbgrader.log: the latest)."""
    Nbgrader(root, command=args[0]).stage(args, "running it")


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
    existed = is_sqlite(db_url) and Path(db_url.removeprefix("sqlite:///").split("?", 1)[0]).is_file()
    with tempfile.TemporaryDirectory(prefix="release-") as release:
        _, seconds = runner.stage(["generate_assignment", assignment, f"--CourseDirectory.release_directory={release}"],
                                  "creating the gradebook")
    notebooks = gradebook_notebooks(db_url, assignment)
    where = root / "gradebook.db" if db_url == gradebook_url(root) and is_sqlite(db_url) else shown_url(db_url)
    say(f"gradebook: {where} {'created' if is_sqlite(db_url) and not existed else 'given the assignment'} from "
        f"solutions/{assignment}/ ({len(notebooks)} notebooks; notebooks/ left as committed) ({seconds:.0f} s)")
    graded_before = root / "autograded"
    if graded_before.is_dir() and any(graded_before.glob(f"*/{assignment}/*.ipynb")):
        say(f"    note: {assignment} was graded before into another gradebook: its students are graded again here, "
            "due dates and extensions come back from deadlines.toml, but manual grades and comments given in "
            "formgrader stay in the other gradebook (nbgrader keeps them nowhere else)")
    return notebooks
