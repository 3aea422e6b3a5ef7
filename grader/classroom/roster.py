"""The class list: `make roster CSV=students.csv` puts the enrolled students into nbgrader's own student table.

Without it nothing knew who should have handed something in: a student whose folder was misnamed, or who submitted
nothing, was in no table (issue 30). nbgrader's gradebook has a student table (``nbgrader db student import``
fills it from a CSV with its own column names); this reads the CSVs an LMS exports too, so the instructor does not
rename columns by hand:

* nbgrader's: ``id``, ``first_name``, ``last_name``, ``email``;
* Moodle's participants export: ``Username`` (or ``ID number``), ``First name``, ``Last name``, ``Email address``;
* Canvas's gradebook export: ``SIS Login ID`` (or ``Login ID``), ``Student`` ("Last, First"), the rows before the
  first student (``Points Possible``) skipped; Canvas's own ``ID`` is kept as nbgrader's ``lms_user_id``, which
  ``make export``'s Canvas file gives back so that Canvas matches its students.

The student id is what nbgrader's exchange records, the student's login on the server. ``make scores`` then lists
every enrolled student (``not submitted`` when the gradebook has no submission of theirs), ``nbgrader export`` writes
a row for each, and ``make autograde`` names the enrolled students it found nothing of.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

# the column of logins, in order of preference (a Canvas export also has "ID", its own number; Moodle's "ID number")
ID_COLUMNS = ("sis login id", "login id", "username", "student_id", "id", "id number", "user id")
FIRST = ("first_name", "first name", "given name")
LAST = ("last_name", "last name", "surname", "family name")
EMAIL = ("email", "email address", "e-mail")
FULL_NAME = ("student", "name", "full name")


class RosterError(Exception):
    """The file is not a class list this can read; str() says why and what to give instead."""


def _pick(row: dict[str, str], names: tuple[str, ...]) -> str:
    lowered = {(k or "").strip().lower(): (v or "").strip() for k, v in row.items()}
    for name in names:
        if lowered.get(name):
            return lowered[name]
    return ""


def read_roster(path: Path) -> list[dict[str, str]]:
    """[{"id", "first_name", "last_name", "email", "lms_user_id"}] from ``path``, one per student (the first row of
    an id kept; lms_user_id: Canvas's own ID, else "")."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise RosterError(f"{path} cannot be read as a UTF-8 CSV file ({exc})") from None
    reader = csv.DictReader(text.splitlines())
    headers = [(h or "").strip().lower() for h in reader.fieldnames or []]
    if not any(h in ID_COLUMNS for h in headers):
        raise RosterError(f"{path} has no column of student ids (its columns: {', '.join(headers) or 'none'}); give "
                          "one named 'id' (nbgrader's), 'Username' (Moodle's) or 'SIS Login ID' (Canvas's): the "
                          "login each student uses on the server, as nbgrader's exchange records it")
    id_column = next(c for c in ID_COLUMNS if c in headers)
    students: dict[str, dict[str, str]] = {}
    for row in reader:
        student = _pick(row, (id_column,))
        if not student or _pick(row, FULL_NAME).lower() in ("points possible", "test student", "student, test"):
            continue  # (Canvas: the row of points possible, its preview student; a row without a login)
        first, last = _pick(row, FIRST), _pick(row, LAST)
        if not (first or last) and "," in _pick(row, FULL_NAME):
            last, first = (part.strip() for part in _pick(row, FULL_NAME).split(",", 1))
        lms = _pick(row, ("id",)) if id_column != "id" and "sis login id" in headers else ""
        students.setdefault(student, {"id": student, "first_name": first, "last_name": last,
                                      "email": _pick(row, EMAIL), "lms_user_id": lms})
    if not students:
        raise RosterError(f"{path} lists no student")
    return list(students.values())


def import_roster(db_url: str, students: list[dict[str, str]]) -> tuple[int, int]:
    """Each student into nbgrader's student table (names and email updated); (added, already there)."""
    from nbgrader.api import Gradebook, MissingEntry

    added = known = 0
    with Gradebook(db_url) as gb:
        for student in students:
            try:
                gb.find_student(student["id"])
                known += 1
            except MissingEntry:
                added += 1
            details: dict[str, Any] = {k: v for k, v in student.items() if k != "id" and v}
            gb.update_or_create_student(student["id"], **details)
    return added, known
