"""`make export`: the course's grades for the LMS, one row per enrolled student, in three files.

The numbers are the report's and the score table's (``grader.classroom.gradebook``: nbgrader's Grade scores, the late
penalty taken off), for the course's assignment in whichever language each student took it (their latest
submission when they handed in both, as ``nbgrader export`` does here: ``plugins.export``). Every student of the
class list (``make roster``) has a row; one who submitted nothing scores 0 and says so.

* ``grades.csv``: everything, plainly: student, names, email, language, status, raw score, minutes late, penalty,
  score, max.
* ``canvas.csv``: Canvas's Gradebook import ("Import" in the Gradebook): the columns Student ("Last, First"), ID,
  SIS User ID, SIS Login ID, Section, then one column for the assignment, and a "Points Possible" row. Canvas
  matches a row by its ID (kept from a Canvas class list, ``make roster``) or SIS Login ID (the student's login);
  a column whose name Canvas does not know becomes a new assignment.
* ``moodle.csv``: Moodle's "Import grades from CSV": a row per student with Username, Email address, ID number
  and First/Last name, the grade in a column named after the grade item, and a feedback column. At import, map
  Username (or Email address) to the user, and the grade column to the grade item, whose maximum should be the
  course's maximum (57 points).

The folder is the instructors' only (0700, files 0600): grades and names.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.classroom.folders import ASSIGNMENT, ASSIGNMENTS, language_of
from grader.classroom.untrusted import csv_cell, private_file, private_folder

EXPORT_DIR = "exports"
ITEM = "Autograd custom Functions"  # the grade column's name in Canvas and Moodle (a new assignment / grade item)


@dataclass
class CourseGrade:
    """One enrolled student's grade for the course's assignment."""

    student: str
    first_name: str
    last_name: str
    email: str
    lms_user_id: str
    language: str  # "en", "zh", or "" (not submitted)
    submitted: bool
    raw: float  # before the late penalty
    penalty: float
    minutes_late: int
    max_score: float

    @property
    def score(self) -> float:
        return round(max(0.0, self.raw - self.penalty), 2)


def course_grades(db_url: str, results: Path | None = None) -> list[CourseGrade]:
    """Every student of the gradebook (the class list and whoever submitted), by id: their grade for the course's
    assignment in the language they took (the latest submission's, when both; ``results``: the course's
    grader_results/, where grading recorded each notebook's own language)."""
    from nbgrader.api import Assignment, Gradebook, Student, SubmittedAssignment

    from grader.classroom.gradebook import gradebook_lateness, gradebook_scores, submitted_languages

    editions = ASSIGNMENTS
    scores = {a: gradebook_scores(db_url, a) for a in editions}
    late = {a: gradebook_lateness(db_url, a) for a in editions}
    read = {a: submitted_languages(results, a) if results is not None else {} for a in editions}
    with Gradebook(db_url) as gb:
        people = {sid: (first or "", last or "", email or "", lms or "") for sid, first, last, email, lms in
                  gb.db.query(Student.id, Student.first_name, Student.last_name, Student.email, Student.lms_user_id)}
        stamps = {(sid, name): stamp for sid, name, stamp in
                  gb.db.query(SubmittedAssignment.student_id, Assignment.name, SubmittedAssignment.timestamp)
                  .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
                  .filter(Assignment.name.in_(list(editions)))}
        tops = [a.max_score for a in gb.db.query(Assignment).filter(Assignment.name.in_(list(editions)))]
    top = max(tops, default=0.0)
    grades = []
    for student in sorted(people):
        taken = [a for a in editions if student in scores[a]]
        first, last, email, lms = people[student]
        if not taken:
            grades.append(CourseGrade(student, first, last, email, lms, "", False, 0.0, 0.0, 0, top))
            continue
        chosen = max(taken, key=lambda a: str(stamps.get((student, a)) or ""))
        row = scores[chosen][student]
        lateness = late[chosen].get(student)
        grades.append(CourseGrade(student, first, last, email, lms, read[chosen].get(student, language_of(chosen)), True,
                                  sum(s for s, _ in row.values()), lateness.penalty if lateness else 0.0,
                                  round(lateness.late.total_seconds() / 60) if lateness else 0,
                                  sum(m for _, m in row.values()) or top))
    return grades


def write_exports(grades: list[CourseGrade], out: Path, item: str = ITEM) -> list[Path]:
    """grades.csv, canvas.csv and moodle.csv in ``out`` (made private); their paths."""
    private_folder(out)
    plain, canvas, moodle = out / "grades.csv", out / "canvas.csv", out / "moodle.csv"
    _write(plain, ["student_id", "first_name", "last_name", "email", "language", "status", "raw_score",
                   "minutes_late", "late_penalty", "score", "max_score"],
           [[g.student, g.first_name, g.last_name, g.email, g.language, "graded" if g.submitted else "not submitted",
             _num(g.raw), g.minutes_late, _num(g.penalty), _num(g.score), _num(g.max_score)] for g in grades])
    top = max((g.max_score for g in grades), default=0.0)
    _write(canvas, ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", item],
           [["Points Possible", "", "", "", "", _num(top)]]
           + [[_canvas_name(g), g.lms_user_id, "", g.student, "", _num(g.score)] for g in grades])
    _write(moodle, ["First name", "Last name", "Username", "ID number", "Email address", item, f"{item} (feedback)"],
           [[g.first_name, g.last_name, g.student, "", g.email, _num(g.score), _feedback(g)] for g in grades])
    return [plain, canvas, moodle]


def _write(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    with private_file(path, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(header)
        for row in rows:
            out.writerow([csv_cell(str(v)) for v in row])


def _num(value: float) -> str:
    return f"{round(value, 2):g}"


def _canvas_name(grade: CourseGrade) -> str:
    """Canvas's "Last, First" (the id when the class list gave no name)."""
    if grade.last_name and grade.first_name:
        return f"{grade.last_name}, {grade.first_name}"
    return grade.last_name or grade.first_name or grade.student


def _feedback(grade: CourseGrade) -> str:
    if not grade.submitted:
        return "not submitted"
    parts = [f"{_num(grade.raw)}/{_num(grade.max_score)} points" + (" (Chinese edition)" if grade.language == "zh" else "")]
    if grade.penalty:
        parts.append(f"late by {grade.minutes_late} min: -{_num(grade.penalty)}")
    return "; ".join(parts)


def export(root: Path, db_url: str) -> list[Path]:
    """`make export`: the three files in <course>/exports/."""
    from grader.classroom.report import RESULTS_DIR

    return write_exports(course_grades(db_url, Path(root) / RESULTS_DIR), Path(root) / EXPORT_DIR)


__all__ = ["ASSIGNMENT", "CourseGrade", "course_grades", "export", "write_exports"]
