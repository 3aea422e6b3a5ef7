"""The class list and what the course says about it: `make roster`, `make due` / `make extension`, `make export`,
and the lines `make autograde` ends with about who is late or enrolled without a submission.

(Split from ``grader.classroom.course``, which runs the grading and the CLI: these read and write the course's
class list, deadlines and exports around it.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grader.classroom import deadlines
from grader.classroom.folders import ASSIGNMENT, ASSIGNMENTS
from grader.classroom.gradebook import (
    GradebookUnreachable, _reached, enrolled_without_submission, gradebook_notebooks, gradebook_students, gradebook_url,
    shown_url,
)
from grader.classroom.nbgrader_run import Nbgrader, ensure_gradebook, say
from grader.classroom.report import RESULTS_DIR
from grader.classroom.untrusted import printable


def roster(root: Path, path: Path) -> int:
    """`make roster CSV=...`: the class list into the gradebook's student table (``grader.classroom.roster``)."""
    from grader.classroom.roster import RosterError, import_roster, read_roster

    root = root.resolve()
    try:
        students = read_roster(path)
    except RosterError as exc:
        say(f"error: {exc}; nothing was imported")
        return 2
    runner = Nbgrader(root, db_url=gradebook_url(root), command="roster")
    ensure_gradebook(runner, ASSIGNMENT)
    added, known = import_roster(runner.db_url, students)
    say(f"roster: {len(students)} students in {path} ({added} added to the gradebook, {known} already there); "
        "make scores lists every one of them, make autograde names those it finds nothing of")
    return 0


def _gradebook_named(root: Path, db_url: str) -> str:
    """The gradebook as the instructor knows it: "gradebook.db" (the course's), else its URL without password."""
    return "gradebook.db" if db_url == f"sqlite:///{root / 'gradebook.db'}" else shown_url(db_url)


def _late_lines(root: Path, assignment: str, late: dict[str, Any], shown: set[str]) -> list[str]:
    """One line per late student of the table (``deadlines.late_line``), in name order."""
    found = deadlines.load(root)
    policy = deadlines.load_policy(root)
    deadline = deadlines.for_assignment(found, assignment)
    return [deadlines.late_line(student, assignment, late[student], deadline, policy)
            for student in sorted(late) if late[student].late and student in shown]


def _not_submitted_line(db_url: str, assignment: str, root: Path | None = None) -> str:
    """'enrolled, nothing submitted: ...' for the class list's students with no submission of the course's
    assignment in any language: none in the gradebook, and none in ``root``'s submitted/ waiting to be graded (a
    student who took the other language, graded by the other run), ('' when there is no class list or everyone
    handed something in)."""
    editions = (assignment,) if assignment not in ASSIGNMENTS else ASSIGNMENTS
    try:
        missing = enrolled_without_submission(db_url, editions)
    except GradebookUnreachable:
        return ""
    if root is not None:
        missing = [s for s in missing if not any((root / "submitted" / s / e).is_dir() for e in editions)]
    if not missing:
        return ""
    shown = ", ".join(printable(s) for s in missing[:12]) + (f" and {len(missing) - 12} more" if len(missing) > 12 else "")
    return (f"enrolled, nothing submitted: {len(missing)} student(s) of the class list ({shown}); a misnamed folder "
            "is named above; make scores lists them")


def export_grades(root: Path) -> int:
    """`make export` (``grader.classroom.grade_export``): the three files, and what is in them."""
    from grader.classroom.grade_export import course_grades, write_exports, EXPORT_DIR

    root = root.resolve()
    db_url = gradebook_url(root)
    if not _reached(gradebook_students, db_url, ASSIGNMENT) and not _reached(gradebook_notebooks, db_url, ASSIGNMENT):
        say(f"Nothing to export: the gradebook {shown_url(db_url)} has no course yet (make autograde first).")
        return 1
    grades = course_grades(db_url, root / RESULTS_DIR)
    paths = write_exports(grades, root / EXPORT_DIR)
    absent = [g.student for g in grades if not g.submitted]
    late = [g for g in grades if g.penalty]
    say(f"export from the gradebook {_gradebook_named(root, db_url)}: {len(grades)} students, "
        f"{len(grades) - len(absent)} graded"
        + (f", {len(absent)} not submitted (0 points: {', '.join(printable(s) for s in absent[:8])}"
           f"{' and more' if len(absent) > 8 else ''})" if absent else "")
        + (f", {len(late)} with a late penalty" if late else "")
        + f", out of {max((g.max_score for g in grades), default=0):g} points each")
    for path, what in zip(paths, ("every column, plainly", "Canvas: Gradebook > Import", "Moodle: Grades > Import > CSV file (map Username to the user)")):
        say(f"    {path}   ({what})")
    return 0


def late_work(args: Any) -> int:
    """`make due` and `make extension` (``grader.classroom.deadlines``): the file, the gradebook, one line."""
    root = args.root.resolve()
    runner = Nbgrader(root, db_url=gradebook_url(root), command=args.command)
    try:
        if args.assignment not in ASSIGNMENTS and not (root / "solutions" / args.assignment).is_dir():
            raise deadlines.DeadlineError(f"no assignment {printable(args.assignment)!r} in this course (its "
                                          f"assignments: {', '.join(ASSIGNMENTS)})")
        ensure_gradebook(runner, args.assignment)
        if args.command == "due":
            line = deadlines.set_due(root, runner.db_url, args.assignment, args.due)
        else:
            line = deadlines.set_extension(root, runner.db_url, args.assignment, args.student, args.extension)
    except deadlines.DeadlineError as exc:
        say(f"error: {exc}; nothing was changed")
        return 2
    say(line)
    return 0
