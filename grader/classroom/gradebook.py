"""The gradebook's queries: scores per student and exercise, the notebooks and students it holds, its URL.

SQLite (the default, <course>/gradebook.db) or PostgreSQL (GRADER_DB_URL): read through nbgrader's own models."""

from __future__ import annotations

import datetime
import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from grader.classroom.folders import ASSIGNMENT, ASSIGNMENTS, REPO, language_of
from grader.classroom.untrusted import hide_password, printable, redact
from grader.judge.testcells import exercise_of


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


def submitted_languages(results_dir: Path, assignment: str) -> dict[str, str]:
    """{student: "en" | "zh"}: the language of the notebooks each student handed in for ``assignment``, as grading
    read it from them (a Chinese notebook handed in under autograd/ is "zh"); students graded before the language
    was recorded are absent (their assignment's language stands)."""
    found: dict[str, set[str]] = {}
    for path in sorted((results_dir / assignment).glob("*/*.json")):
        try:
            language = json.loads(path.read_text(encoding="utf-8")).get("language")
        except (OSError, ValueError, UnicodeDecodeError, AttributeError):
            continue
        if isinstance(language, str) and language:
            found.setdefault(path.parent.name, set()).add(language)
    return {student: next(iter(langs)) if len(langs) == 1 else "/".join(sorted(langs))
            for student, langs in found.items()}


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


def class_scores(db_url: str, assignments: tuple[str, ...] = ASSIGNMENTS, with_enrolled: bool = False,
                 results: Path | None = None) -> tuple[dict[str, dict[str, tuple[float, float]]], dict[str, str]]:
    """The whole class over the assignments (default: every one of the course, autograd and its translations):
    ({student: {exercise: (score, max)}}, {student: language}), a student's language being the one of the assignment
    they handed in ("en", "zh"). The translations have the same exercises and points, so one table holds them. A
    student who handed in two of them gets one row each, the second named "<student> (<language>)".
    ``with_enrolled``: the students of nbgrader's student table (the class list, ``make roster``) who handed in
    none of them get an empty row (shown as "not submitted"), language "-". ``results``: the course's
    grader_results/, where grading recorded each notebook's own language (a Chinese notebook handed in under
    autograd/ is "zh"), which then wins over the assignment's."""
    table: dict[str, dict[str, tuple[float, float]]] = {}
    languages: dict[str, str] = {}
    for assignment in assignments:
        language = language_of(assignment)
        read = submitted_languages(results, assignment) if results is not None else {}
        for student, row in gradebook_scores(db_url, assignment).items():
            name = _row_name(student, assignment, table)
            table[name], languages[name] = row, read.get(student, language)
    if with_enrolled:  # the class list (make roster): who handed in nothing has a row too
        editions = ASSIGNMENTS if set(assignments) & set(ASSIGNMENTS) else assignments  # (a student who took the
        # course in the other language handed something in: a report of one language does not list them)
        for student in enrolled_without_submission(db_url, editions):
            table.setdefault(student, {})
            languages.setdefault(student, "-")
    return table, languages


def _row_name(student: str, assignment: str, taken: Any) -> str:
    """A student's row name in the class's table: their id, or "<id> (<language>)" for a second edition they
    handed in (``taken``: the names, or students, already in the table)."""
    return student if student not in taken else f"{student} ({language_of(assignment)})"


def class_lateness(db_url: str, assignments: tuple[str, ...] = ASSIGNMENTS) -> dict[str, Lateness]:
    """``gradebook_lateness`` over the assignments, by the names ``class_scores`` gives the rows (a student who
    handed in two editions: the second is "<student> (<language>)"). SQL only."""
    found: dict[str, Lateness] = {}
    seen: set[str] = set()
    for assignment in assignments:
        late = gradebook_lateness(db_url, assignment)
        for student in sorted(gradebook_students(db_url, assignment)):
            name = _row_name(student, assignment, seen)
            seen.add(student)
            if student in late:
                found[name] = late[student]
    return found


def render_scores(table: dict[str, dict[str, tuple[float, float]]], languages: dict[str, str] | None = None,
                  late: dict[str, Lateness] | None = None) -> str:
    """The table of scores per student and exercise, with the total; with ``languages`` ({student: "en" or "zh"}),
    a column "lang" after the student: the language of the notebooks they handed in. With ``late`` (when any
    student is late): a column "late" saying by how much and the points the penalty took; the total is after it."""
    if not table:
        return "No autograded submissions in the gradebook yet."
    from grader.classroom.deadlines import describe_duration

    late = {s: v for s, v in (late or {}).items() if v.late and s in table}
    exercises: list[str] = []
    for row in table.values():
        exercises += [e for e in row if e not in exercises]
    lang = ["lang"] if languages is not None else []
    header = ["student", *lang, *map(printable, exercises), *(["late"] if late else []), "total"]
    rows = [header]
    for student in sorted(table):
        row = table[student]
        penalty = late[student].penalty if student in late else 0.0
        total = sum(s for s, _ in row.values()) - penalty
        top = sum(m for _, m in row.values())
        lateness = ([describe_duration(late[student].late) + (f" (-{penalty:g})" if penalty else "")
                     if student in late else ""] if late else [])
        rows.append([printable(student), *([languages.get(student, "?")] if languages is not None else []),
                     *(f"{row[e][0]:g}/{row[e][1]:g}" if e in row else "-" for e in exercises),
                     *lateness, f"{round(total, 2):g}/{top:g}" if row else "not submitted"])
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    left = 1 + len(lang)  # (the student and the language: on the left; the scores: on the right)
    lines = ["  ".join(cell.rjust(w) if i >= left else cell.ljust(w) for i, (cell, w) in enumerate(zip(r, widths)))
             for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


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


def enrolled_without_submission(db_url: str, assignments: Sequence[str]) -> list[str]:
    """The gradebook's students (the class list, ``make roster``) with no submission of any of ``assignments``
    (the course's, in either language), by id; [] when the gradebook has no student table yet."""
    everyone = _gradebook_column(db_url, "", "SELECT id FROM student ORDER BY id", "student")
    handed: set[str] = set()
    for assignment in assignments:
        handed |= gradebook_students(db_url, assignment)
    return [s for s in everyone if s not in handed]


def _gradebook_column(db_url: str, assignment: str, query: str, table: str) -> list[Any]:
    return [row[0] for row in _gradebook_rows(db_url, query, {"name": assignment}, table)]


def _gradebook_rows(db_url: str, query: str, params: dict[str, Any], table: str) -> list[tuple[Any, ...]]:
    """The rows of ``query`` ([] when the gradebook or ``table`` is not there yet), with SQL: sqlite3 for a file,
    SQLAlchemy for a server. Raises GradebookUnreachable."""
    if is_sqlite(db_url):
        import sqlite3

        path = db_url.removeprefix("sqlite:///").split("?", 1)[0]
        if not path or not Path(path).is_file():
            return []
        try:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                return [tuple(row) for row in db.execute(query, params)]
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
            return [tuple(row) for row in db.execute(sqlalchemy.text(query), params)]
    except SQLAlchemyError as exc:
        raise GradebookUnreachable(redact(" ".join(str(getattr(exc, "orig", None) or exc).split()), db_url)) from None
    finally:
        engine.dispose()


@dataclass(frozen=True)
class Lateness:
    """A submission's lateness, from the gradebook: how late after its due date (the extension included), the
    extension, and the points the late penalty took (0.0: none)."""

    late: datetime.timedelta
    extension: datetime.timedelta | None
    penalty: float
    due: datetime.datetime  # the student's due date (extension included), naive UTC as nbgrader keeps it


def gradebook_lateness(db_url: str, assignment: str = ASSIGNMENT) -> dict[str, Lateness]:
    """{student: Lateness} for the submissions of ``assignment`` that came in after their due date or have an
    extension (nbgrader's SubmittedAssignment.timestamp, .extension, Assignment.duedate and the notebooks'
    late_submission_penalty), read with SQL (no nbgrader import: the table after every run reads it)."""
    rows = _gradebook_rows(
        db_url, "SELECT submitted_assignment.student_id, assignment.duedate, submitted_assignment.timestamp, "
        "submitted_assignment.extension, SUM(COALESCE(submitted_notebook.late_submission_penalty, 0)) "
        "FROM submitted_assignment JOIN assignment ON submitted_assignment.assignment_id = assignment.id "
        "LEFT JOIN submitted_notebook ON submitted_notebook.assignment_id = submitted_assignment.id "
        "WHERE assignment.name = :name AND assignment.duedate IS NOT NULL GROUP BY submitted_assignment.student_id, "
        "assignment.duedate, submitted_assignment.timestamp, submitted_assignment.extension",
        {"name": assignment}, "submitted_assignment")
    found: dict[str, Lateness] = {}
    for student, due, stamp, extension, penalty in rows:
        due, stamp, extension = _when(due), _when(stamp), _interval(extension)
        if due is None:
            continue
        due = due + (extension or datetime.timedelta(0))
        late = max(datetime.timedelta(0), stamp - due) if stamp is not None else datetime.timedelta(0)
        if late or extension:
            found[student] = Lateness(late, extension, float(penalty or 0), due)
    return found


_EPOCH = datetime.datetime(1970, 1, 1)


def _when(value: Any) -> datetime.datetime | None:
    """A DateTime column as SQLite's text or PostgreSQL's datetime -> naive UTC (nbgrader stores UTC)."""
    if value is None or isinstance(value, datetime.datetime):
        return value
    return datetime.datetime.fromisoformat(str(value))


def _interval(value: Any) -> datetime.timedelta | None:
    """SQLAlchemy's Interval: a timedelta from PostgreSQL; on SQLite a DATETIME counted from 1970-01-01."""
    if value is None or isinstance(value, datetime.timedelta):
        return value or None
    return (datetime.datetime.fromisoformat(str(value)) - _EPOCH) or None


def _reached(query: Any, db_url: str, assignment: str) -> Any:
    try:
        return query(db_url, assignment)
    except GradebookUnreachable as why:
        raise SystemExit(f"cannot reach the gradebook {shown_url(db_url)}: {why}") from None
