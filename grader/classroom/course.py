"""Instructor tooling around nbgrader: the demo class, autograding, and the table of scores per student and exercise.

    python -m grader.classroom.course demo        release, build the example class (English and Chinese-speaking students:
                                        autograd and autograd-zh), autograde it with nbgrader, feedback, table
    python -m grader.classroom.course autograde   nbgrader autograde of submitted/ (the gradebook created first if missing), table
    python -m grader.classroom.course autograde --jobs 4   the same in 4 nbgrader processes over disjoint groups of students,
                                        sharing one PostgreSQL gradebook (GRADER_DB_URL)
    python -m grader.classroom.course scores      the table of the course in the current directory (after autograding)

nbgrader's own output goes to the run's log, <course>/logs/<date_time>-<command>.log (named at the end; with several
processes, one <...>-job<N>.log each), kept: <course>/nbgrader.log (and nbgrader-job<N>.log) link to the latest run's;
the terminal gets one line per stage, a progress bar over the notebooks while autograding (plain lines when not a
terminal), the table, where the files are, and one line for each warning or error nbgrader reports, naming its
student.

Settings (environment variables; the Makefile's DB_URL and JOBS set them):

    GRADER_DB_URL   the gradebook, as nbgrader's CourseDirectory.db_url (nbgrader_config.py passes it to every
                    nbgrader command: feedback, export, formgrader); default sqlite:///<course>/gradebook.db
    GRADER_JOBS     nbgrader processes autograding at once (default 1); more than 1 needs a PostgreSQL gradebook

This module imports little (no torch, nbformat or nbgrader at import): `make autograde` starts nbgrader's
process at once, and reads nothing else that takes time before the first notebook.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

from grader.classroom import deadlines
from grader.classroom.demo_class import (  # noqa: F401
    answer_sources, build_submission, class_answers, class_languages, mistake_source,
)
from grader.classroom.folders import ASSIGNMENT, ASSIGNMENTS, LOG_NAME, REPO, language_of  # noqa: F401
from grader.classroom.gradebook import (  # noqa: F401 (course.X: what tests and the benchmarks read here)
    GradebookUnreachable, _cell_order, _reached, class_lateness, class_scores, enrolled_without_submission,
    gradebook_lateness, gradebook_notebooks, gradebook_scores, gradebook_students, gradebook_url, is_sqlite,
    render_scores, shown_url, submitted_languages,
)
from grader.classroom.nbgrader_run import (  # noqa: F401
    Interrupted, Job, Nbgrader, ensure_gradebook, nbgrader, nbgrader_command, nbgrader_env, retire_latest, say,
)
from grader.classroom.class_list import (  # noqa: F401 (the CLI's commands; course.X for tests)
    _gradebook_named, _late_lines, _not_submitted_line, export_grades, late_work, roster,
)
from grader.classroom.report import RESULTS_DIR, flag_line
from grader.classroom.untrusted import printable, private_file


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
                edition = _edition_of(folder)
                if assignment in ASSIGNMENTS and edition and edition != assignment:
                    break  # the course in the other language: the run of that assignment names it
                said[student] = (f"{where}/{printable(folder.name)}/ is not the assignment's folder "
                                 f"({len(names)} notebooks): rename it to {where}/{assignment}/")
                break
        else:
            loose = {f.name for f in student_dir.glob("*.ipynb")}
            if loose & notebook_names:
                said[student] = (f"its notebooks are in {where}/ itself ({len(loose)} notebooks): move them into "
                                 f"{where}/{assignment}/")
    return said


def _edition_of(folder: Path) -> str:
    """The course's assignment in the language of the notebooks in ``folder`` (autograd, autograd-zh), read from
    their metadata as grading reads it; "" when none can be read."""
    from grader.spec.messages import language_of as notebook_language

    for path in sorted(folder.glob("*.ipynb"))[:4]:
        try:
            language = notebook_language(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        return ASSIGNMENT if language == "en" else next((a for a in ASSIGNMENTS if language_of(a) == language), "")
    return ""


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
                 "local one for trying: python -m grader.classroom.postgres start), or use JOBS=1.")


def autograde(root: Path, assignment: str = ASSIGNMENT, force: bool = False, jobs: int | None = None,
              db_url: str | None = None, workers: int = 0, students: Sequence[str] = ()) -> int:
    """`make autograde`: nbgrader autograde of everything in submitted/, with progress, then the table.

    With ``jobs`` > 1 (default: GRADER_JOBS, else 1), that many nbgrader processes autograde disjoint groups of
    students at once, writing one gradebook, which must then be a database server's (``db_url``, default:
    GRADER_DB_URL): SQLite is refused. ``workers``: sandboxed workers per process (default: the cores shared
    out, or TrustedExecute's configuration with one process).

    What is left out is said, one line each, and counted at the end: a student folder without the assignment's
    folder (misnamed), a notebook under a name the assignment does not have (renamed). One run at a time per
    course (``course_lock``); Ctrl-C leaves every student recorded completely or as before (exit status 130).
    ``students`` (`make autograde STUDENT=erin`, several separated by commas): only those, graded again whether or not
    they were before; the others are left as they are."""
    root = root.resolve()
    db_url = db_url or gradebook_url(root)
    jobs = jobs or jobs_setting()
    if (root / "solutions").is_dir() and not (root / "solutions" / assignment).is_dir() \
            and not _reached(gradebook_notebooks, db_url, assignment):
        found = sorted(p.name for p in (root / "solutions").glob("*") if p.is_dir())
        raise SystemExit(f"no assignment {printable(assignment)!r} in this course: {root / 'solutions'}/"
                         f"{printable(assignment)}/ does not exist (its assignments: {', '.join(found) or 'none'}); "
                         f"give one of them (make autograde ASSIGNMENT=...), nothing was graded")
    try:  # a broken deadlines.toml stops the run before anything is graded (else every penalty would be wrong)
        deadlines.load(root), deadlines.load_policy(root)
    except deadlines.DeadlineError as exc:
        raise SystemExit(f"{exc} (nothing was graded)") from None
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
    only = [s for s in dict.fromkeys(students) if s]
    unknown = [s for s in only if s not in handed_in]
    if unknown:
        raise SystemExit(f"no submission of {', '.join(printable(s) for s in unknown)} for {printable(assignment)}: "
                         f"{root / 'submitted'}/<student>/{printable(assignment)}/ does not exist for "
                         f"{'them' if len(unknown) > 1 else 'this student'} (nothing was graded)")
    with course_lock(root):
        return _autograde_locked(root, assignment, force, jobs, db_url, workers, handed_in, len(elsewhere), only)


def _ungraded_notebooks(source: Path) -> set[str]:
    """The instructor's notebooks of an assignment that score nothing (no test cell with points: the labs)."""
    ungraded = set()
    for path in source.glob("*.ipynb"):
        try:
            cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
        except (OSError, ValueError):
            continue
        if not any(c.get("metadata", {}).get("nbgrader", {}).get("grade") for c in cells if isinstance(c, dict)):
            ungraded.add(path.name)
    return ungraded


def _autograde_locked(root: Path, assignment: str, force: bool, jobs: int, db_url: str, workers: int,
                      handed_in: dict[str, list[Path]], folders_left_out: int, only: Sequence[str] = ()) -> int:
    runner = Nbgrader(root, db_url=db_url, command="autograde")
    try:
        notebooks = ensure_gradebook(runner, assignment)
    except Interrupted:
        say("interrupted while the gradebook was being created: nothing was graded; run make autograde again")
        return 130
    known = {f"{name}.ipynb" for name in notebooks}
    ungraded = _ungraded_notebooks(root / "solutions" / assignment)
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
        hinted: set[str] = set()
        for f in unknown:
            files_left_out += 1
            hint = rename_hint(f.name, missing)
            hinted |= {hint} if hint else set()
            if hint:
                runner.quiet |= {runner.shown(f"No submitted file: {root / 'submitted' / student / assignment / hint}")}
                what = f"not a notebook of {assignment}: rename it to {hint} (nbgrader scores that notebook 0 meanwhile)"
            elif rename_hint(f.name, known):
                what = f"a second copy of {rename_hint(f.name, known)}, which is graded; remove it"
            else:
                what = f"not a notebook of {assignment} (its notebooks: {', '.join(sorted(known))})"
            runner.quiet |= {runner.shown(f"Skipping unknown notebook: {f}")}
            say(f"    warning: {printable(student)}: {folder}/{printable(f.name)} left out: {what}")
        never = sorted(missing - hinted - ungraded)  # (a notebook that scores nothing costs nothing when missing)
        runner.quiet |= {runner.shown(f"No submitted file: {root / 'submitted' / student / assignment / n}")
                         for n in missing & ungraded}
        if never and (not only or student in only):  # (nbgrader's own line said only "No submitted file: <path>")
            runner.quiet |= {runner.shown(f"No submitted file: {root / 'submitted' / student / assignment / n}")
                             for n in never}
            say(f"    note: {printable(student)} handed in no {', '.join(never)}: "
                f"{'its' if len(never) == 1 else 'their'} exercises score 0")
    counts = {student: sum(1 for f in files if f.name in known) for student, files in handed_in.items()
              if student not in skipped and (not only or student in only)}
    runner.notebooks_of = counts
    total = sum(counts.values())
    pending_force = root / f".autograde-force-{assignment}"  # students an interrupted FORCE=1 did not reach yet
    if only and counts:  # STUDENT=: those graded again (as --force does, for them only), the others untouched
        _grade_again(root, assignment, counts)
    elif not force and counts:
        _forget_ungraded(root, assignment, db_url, counts, known)
        unfinished = [s for s in _read_pending(pending_force) if s in counts]
        _grade_again(root, assignment, unfinished)
        if unfinished:
            say(f"autograde: finishing the FORCE=1 run interrupted before: {len(unfinished)} students it had not "
                f"reached ({_names(unfinished)}) are graded again")
    if force and not only and counts:
        _write_pending(pending_force, list(counts))
    groups = split_class(counts, jobs) if counts else []
    say(f"autograde: {len(counts)} students, {total} notebooks, each in a sandbox; gradebook: {_gradebook_named(root, db_url)}; "
        + ("nbgrader records them one by one" if len(groups) <= 1 else
           f"{len(groups)} nbgrader processes record them, sharing the gradebook {shown_url(db_url)}"))
    with tempfile.TemporaryDirectory(prefix="autograde-") as scratch:
        try:
            run = _autograde_jobs(runner, assignment, force, groups, skipped, list(handed_in), total, Path(scratch),
                                  workers)
        except Interrupted:
            halfway = ", ".join(runner.left_halfway)
            if pending_force.exists():  # FORCE=1 (now or before): the rerun grades again who it did not reach
                _write_pending(pending_force, [s for s in _read_pending(pending_force) if s not in runner.recorded])
            say(f"interrupted: {len(runner.recorded)} students recorded, "
                + (f"{halfway} left as before" if halfway else "no student halfway")
                + "; run make autograde again")
            return 130
        if pending_force.exists() and not only:
            _write_pending(pending_force, [s for s in _read_pending(pending_force)
                                           if s not in runner.recorded and s not in counts])
        _, seconds, failed = run if groups else (0, 0.0, [])
        left_before = sum(counts.get(s, 0) for s in runner.skipped)
        expected = total - left_before
        graded = sum(counts.get(s, 0) for s in runner.recorded)
        if failed and not runner.recorded:  # nbgrader stopped before recording anyone (e.g. the grading
            # environment could not start): its error line said what and what to do; no count, table or "failed
            # for some students"
            say(f"nbgrader's full log: {runner.logs_named(len(groups))}")
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
    table = table if table is not None else gradebook_scores(db_url, assignment)
    late = _reached(gradebook_lateness, db_url, assignment)
    read = submitted_languages(root / RESULTS_DIR, assignment)  # (a Chinese notebook under autograd/ is "zh")
    say("\n" + render_scores(table, {s: read.get(s, language_of(assignment)) for s in table}, late) + "\n")
    for line in _late_lines(root, assignment, late, set(table)):
        say(line)
    absent = _not_submitted_line(db_url, assignment, root)
    if absent:
        say(absent)
    flagged = flag_line(root, assignment)
    if flagged:
        say(flagged)
    say(f"Autograded notebooks: {root / 'autograded'}/<student>/{assignment}/")
    problems = len(runner.problems) + len(skipped) + folders_left_out + files_left_out
    if runner.log.exists():  # (no nbgrader process ran when nobody was left to grade: no log)
        say(f"nbgrader's full log: {runner.logs_named(len(groups))}"
            + (f" ({problems} warning(s) or error(s) above)" if problems else ""))
    for job in failed:
        say(f"nbgrader autograde failed for some students{' in ' + job.label if job.label else ''} "
            f"(exit status {job.returncode}); see the lines above and its log: {job.log}")
    return 1 if failed else 0


def _forget_ungraded(root: Path, assignment: str, db_url: str, students: dict[str, int],
                     known: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    """nbgrader skips a student whose autograded/ folder is there (and not older than the submission), whatever
    the gradebook holds: after switching gradebooks (SQLite to PostgreSQL, a new database) it would grade nothing,
    and a notebook renamed as the warning told (``03_double_backward (1).ipynb``) kept its 0. The autograded folders
    of students the gradebook in use has no submission of, and of students who now hand in a notebook of the
    assignment their autograded copy lacks, are removed first (as --force does, for them only), so nbgrader grades
    them."""
    try:
        recorded = gradebook_students(db_url, assignment)
    except GradebookUnreachable:
        return  # (ensure_gradebook reached it a moment ago; nbgrader will say what goes wrong)
    stale = [s for s in students if s not in recorded and (root / "autograded" / s / assignment).exists()]
    renamed = [s for s in students if s not in stale and _newly_named(root, assignment, s, known)]
    _grade_again(root, assignment, [*stale, *renamed])
    if stale:
        say(f"autograde: {len(stale)} students have autograded notebooks but no grades in the gradebook "
            f"{shown_url(db_url)} ({_names(stale)}): they are graded again")
    if renamed:
        say(f"autograde: {len(renamed)} students hand in a notebook their autograded copy lacks (renamed as told?) "
            f"({_names(renamed)}): they are graded again")


def _grade_again(root: Path, assignment: str, students: Iterable[str]) -> None:
    """What nbgrader's --force does, for these students only: their autograded copies removed, so nbgrader grades
    them (it skips a student whose autograded/ folder is there and not older than the submission)."""
    for student in students:
        _remove_tree(root / "autograded" / student / assignment)


def _read_pending(path: Path) -> list[str]:
    """The students a FORCE=1 run had still to grade when it was interrupted ([] when none)."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [s for s in found if isinstance(s, str)] if isinstance(found, list) else []


def _write_pending(path: Path, students: list[str]) -> None:
    """Keep the students a FORCE=1 run has still to grade (the file goes when there are none)."""
    if students:
        with private_file(path) as f:
            json.dump(students, f)
    else:
        path.unlink(missing_ok=True)


def _newly_named(root: Path, assignment: str, student: str, known: set[str]) -> bool:
    """Whether ``student`` now hands in a notebook of the assignment that their autograded copy does not hold."""
    graded = root / "autograded" / student / assignment
    if not graded.is_dir():
        return False
    handed = {p.name for p in (root / "submitted" / student / assignment).glob("*.ipynb")} & set(known)
    return bool(handed - {p.name for p in graded.glob("*.ipynb")})


def _remove_tree(folder: Path) -> None:
    """shutil.rmtree, through the read-only folders nbgrader leaves (its permissions, 444/555); nothing when the
    folder is not there (a student never graded, or one whose copy nbgrader removed before an interruption)."""
    import stat

    if not folder.exists() and not folder.is_symlink():
        return

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
    """`make feedback`: nbgrader generate_feedback for every autograded submission. nbgrader's log goes to the run's
    own in <course>/logs/ (<course>/nbgrader.log: the latest); the terminal gets a progress line over the pages,
    each warning or error nbgrader reports (one line each, naming its student), and where the pages are."""
    root = root.resolve()
    autograded = sorted((root / "autograded").glob(f"*/{assignment}/*.ipynb"))
    if not autograded:
        say(f"No autograded submissions in {root / 'autograded'}/<student>/{assignment}/: run make autograde first.")
        return 0
    students = len({path.parent.parent.name for path in autograded})
    runner = Nbgrader(root, command="feedback")
    say(f"feedback: {students} students, {len(autograded)} autograded notebooks")
    returncode, written, seconds = runner.run_command(
        ["generate_feedback", assignment, *(["--force"] if force else [])], len(autograded),
        {"desc": "feedback", "unit": "page", "done": "feedback pages written"})
    problems = len(runner.problems)
    say(f"feedback: {written} pages written to {root / 'feedback'}/<student>/{assignment}/ ({seconds:.0f} s)"
        + ("" if written == len(autograded) or force else
           "; the others were written before (make feedback FORCE=1 writes them again)"))
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
    """Start one nbgrader process per group (``python -m grader.classroom.nbgrader_job``), wait for all; (notebooks graded,
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
            jobs.append(Job("", command, runner.log, group, latest=runner.latest))
        else:
            log, latest = runner.job_log(number)
            jobs.append(Job(f"job {number}/{len(groups)}", command, log, group, latest=latest))
    if len(jobs) > 1:
        # nbgrader-job<N>.log of an earlier run with more processes than this one: no longer named as the latest
        # (its log stays in logs/)
        for stale in root.glob("nbgrader-job*.log"):
            if all(stale != job.latest for job in jobs):
                retire_latest(stale)
        with runner.open_log("a") as log:
            for job in jobs:
                log.write(f"{job.label}: {len(job.students)} students ({_names(job.students)}); log: {job.log}\n")
    graded, seconds = runner.run_jobs(jobs, total, append=len(jobs) == 1)
    return graded, seconds, [job for job in jobs if job.returncode != 0]


def _names(students: list[str], shown: int = 5) -> str:
    return ", ".join(map(printable, students[:shown])) + (f", ... ({len(students) - shown} more)"
                                                          if len(students) > shown else "")


def demo(workdir: Path) -> int:
    """The main job on the bundled example class: release, autograde, feedback, table. The class hands in both
    assignments of the course: the English notebooks (autograd) and, for the students whose students.toml table says
    language = "zh", the Chinese ones (autograd-zh); one gradebook, one table with each student's language."""
    root = workdir.resolve()
    if root.exists():
        shutil.rmtree(root)
    (root / "solutions").mkdir(parents=True)
    # solutions/ holds exactly the course's assignments (those it has: a copy may lack the translation), which
    # nbgrader's glob over them below matches
    assignments = tuple(a for a in ASSIGNMENTS if (REPO / "solutions" / a).is_dir())
    for assignment in assignments:
        os.symlink(REPO / "solutions" / assignment, root / "solutions" / assignment)
    # its own gradebook, whatever GRADER_DB_URL says
    runner = Nbgrader(root, db_url=f"sqlite:///{root / 'gradebook.db'}", command="demo")
    say(f"Demo course in {root} (instructor notebooks from {REPO / 'solutions'})")
    release = ["--CourseDirectory.release_directory=release"]
    every = f"{ASSIGNMENT}*"  # one nbgrader process for all assignments where nbgrader takes a glob
    _, seconds = runner.stage(["generate_assignment", every, "--force", *release], "releasing the assignments")
    say(f"1/4 release: student notebooks generated by nbgrader in {root / 'release'}/{_either(assignments)} "
        f"({seconds:.0f} s)")

    spec = REPO / "examples" / "students.toml"
    languages = class_languages(spec)
    totals: dict[str, int] = {}
    for assignment in assignments:
        students = class_answers(spec, answer_sources(REPO / "solutions" / assignment), REPO / "examples" / "mistakes",
                                 language_of(assignment))
        for student, answers in students.items():
            build_submission(root / "release" / assignment, answers, root / "submitted" / student / assignment)
        totals[assignment] = sum(len(files) for files in submissions(root, assignment).values())
    names = ", ".join(f"{student}{'' if lang == 'en' else f' ({lang})'}" for student, lang in languages.items())
    say(f"2/4 submissions: {len(languages)} example students ({names}), {sum(totals.values())} notebooks")

    say("3/4 autograde: nbgrader, every notebook in a sandbox, the class graded ahead on every core")
    for assignment in (a for a in assignments if totals[a]):  # (one process each: grading ahead takes one name)
        say(f"    {assignment}: {totals[assignment]} notebooks")
        graded, seconds = runner.stage(["autograde", assignment, "--force", *release], "autograding",
                                       totals[assignment])
        say(f"    {graded}/{totals[assignment]} notebooks graded ({seconds:.0f} s)")
    _, seconds = runner.stage(["generate_feedback", every, "--force", *release], "writing feedback")
    from grader.classroom.report import build

    page = build(root, assignments, root / "reports")
    say(f"4/4 feedback: one HTML page per student and notebook, and the class report ({seconds:.0f} s)")

    say("\nScores per student and exercise (from nbgrader's gradebook; lang: the notebooks' language):\n")
    say(render_scores(*class_scores(f"sqlite:///{root / 'gradebook.db'}", assignments, results=root / RESULTS_DIR)))
    say(f"\nFeedback:       {root / 'feedback'}/<student>/{_either(assignments)}/*.html")
    say(f"Class report:   {page} (and scores.csv, diagnoses.csv, flags.csv beside it)")
    flagged = flag_line(root, assignments)
    if flagged:
        say(flagged)
    problems = len(runner.problems)
    say(f"nbgrader's log: {runner.log}" + (f" ({problems} warning(s) or error(s) above)" if problems else ""))
    return 0


def _either(names: tuple[str, ...]) -> str:
    """"{autograd,autograd-zh}" (a shell's way to name either folder), or the one name."""
    return names[0] if len(names) == 1 else "{" + ",".join(names) + "}"


def course_root(db_url: str) -> Path:
    """The course folder of a SQLite gradebook (where grader_results/ and reports/ are); else the current one."""
    prefix = "sqlite:///"
    return Path(db_url[len(prefix):]).parent if db_url.startswith(prefix) else Path(".")


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m grader.classroom.course")
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="autograde the bundled example class in a scratch course directory")
    d.add_argument("--dir", type=Path, default=REPO / ".demo", help="scratch course directory (replaced)")
    a = sub.add_parser("autograde", help="nbgrader autograde of submitted/ (creating the gradebook if needed), then the table")
    a.add_argument("--root", type=Path, default=Path("."), help="course folder (default: the current one)")
    a.add_argument("--assignment", default=ASSIGNMENT,
                   help=f"the assignment, a folder of solutions/ (default: {ASSIGNMENT}; the course's: "
                        f"{', '.join(ASSIGNMENTS)}); make autograde ASSIGNMENT=...")
    a.add_argument("--force", action="store_true",
                   help="autograde again the submissions autograded before (make autograde FORCE=1)")
    a.add_argument("--jobs", type=int, default=None,
                   help="nbgrader processes over disjoint groups of students (default: GRADER_JOBS, else 1); "
                        "more than 1 needs a PostgreSQL gradebook (GRADER_DB_URL or --db-url)")
    a.add_argument("--db-url", default=None,
                   help="the gradebook, as nbgrader's CourseDirectory.db_url (default: GRADER_DB_URL, else "
                        "sqlite:///<course>/gradebook.db)")
    a.add_argument("--student", action="append", default=[],
                   help="only this student (repeat, or separate by commas), graded again whether or not they were "
                        "before; the others are left as they are (make autograde STUDENT=erin)")
    a.add_argument("--workers", type=int, default=0,
                   help="sandboxed workers per nbgrader process (default: the cores shared out between them)")
    r = sub.add_parser("roster", help="the class list into nbgrader's student table (make roster CSV=...)")
    r.add_argument("--csv", type=Path, required=True, help="the class list: nbgrader's, Moodle's or Canvas's CSV")
    r.add_argument("--root", type=Path, default=Path("."), help="course folder (default: the current one)")
    due = sub.add_parser("due", help="an assignment's due date into deadlines.toml and the gradebook (make due DUE=...)")
    due.add_argument("--due", required=True, help='"2026-12-01 23:59 +08:00" (a time zone, else this machine\'s); "none" removes it')
    ext = sub.add_parser("extension", help="one student's extension (make extension STUDENT=erin EXTENSION=\"2 days\")")
    ext.add_argument("--student", required=True, help="the student's id")
    ext.add_argument("--extension", required=True, help='"2 days", "36 hours", "1 week 2 days"; "0" removes it')
    for late in (due, ext):
        late.add_argument("--root", type=Path, default=Path("."), help="course folder (default: the current one)")
        late.add_argument("--assignment", default=ASSIGNMENT,
                          help=f"the assignment (default: {ASSIGNMENT}, which its translations follow)")
    x = sub.add_parser("export", help="the grades for the LMS: exports/grades.csv, canvas.csv, moodle.csv (make export)")
    x.add_argument("--root", type=Path, default=Path("."), help="course folder (default: the current one)")
    f = sub.add_parser("feedback", help="nbgrader generate_feedback for every autograded submission, with progress")
    f.add_argument("--root", type=Path, default=Path("."), help="course folder (default: the current one)")
    f.add_argument("--force", action="store_true", help="write again the pages written before")
    f.add_argument("--assignment", default=ASSIGNMENT,
                   help=f"the assignment (default: {ASSIGNMENT}; the course's: {', '.join(ASSIGNMENTS)}); "
                        "make feedback ASSIGNMENT=...")
    s = sub.add_parser("scores", help="print scores per student and exercise from a gradebook (every assignment of "
                       "the course, each student's language in a column)")
    s.add_argument("--db", default=os.environ.get("GRADER_DB_URL", "").strip() or "sqlite:///gradebook.db",
                   help="the gradebook's URL (default: GRADER_DB_URL, else sqlite:///gradebook.db)")
    s.add_argument("--root", type=Path, default=None,
                   help="course folder with grader_results/ (default: the gradebook's folder)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo(args.dir)
    if args.command == "feedback":
        return feedback(args.root, args.assignment, force=args.force)
    if args.command == "roster":
        return roster(args.root, args.csv)
    if args.command in ("due", "extension"):
        return late_work(args)
    if args.command == "export":
        return export_grades(args.root)
    if args.command == "autograde":
        if args.jobs is not None and args.jobs < 1:
            parser.error("--jobs needs 1 or more")
        try:
            return autograde(args.root, args.assignment, force=args.force, jobs=args.jobs, db_url=args.db_url,
                             workers=args.workers, students=[s.strip() for s in ",".join(args.student).split(",")])
        except KeyboardInterrupt:  # (before or after the nbgrader processes: nothing half-recorded)
            say("interrupted: run make autograde again")
            return 130
    results = (args.root or course_root(args.db)) / RESULTS_DIR
    shown = printable(args.db.removeprefix("sqlite:///")) if is_sqlite(args.db) else shown_url(args.db)
    say(f"Scores from the gradebook {shown} (every assignment of the course; lang: the notebooks' "
        "language; not submitted: on the class list, nothing handed in):\n")
    say(render_scores(*class_scores(args.db, with_enrolled=True, results=results), class_lateness(args.db)))
    flagged = flag_line(args.root or course_root(args.db))
    if flagged:
        say(flagged)
    return 0


if __name__ == "__main__":
    sys.exit(main())
