"""``nbgrader export`` for a course taught in two languages: one row per student for the course's assignment.

nbgrader knows ``autograd`` and ``autograd-zh`` as two assignments, so its CSV export wrote a row for each, and every
student got a 0/57 row for the language they did not take (an LMS upload would have been wrong for everyone; issue
30). Here a student's grade for the course is their one submission, in whichever language they chose: one row
named ``autograd``, with a ``language`` column. Other assignments are exported as nbgrader does. Values are written
by the csv module (a name with a comma stays one field) into a file only the instructor can read.
"""

from __future__ import annotations

import csv
from typing import Any

from nbgrader.api import MissingEntry
from nbgrader.plugins.export import CsvExportPlugin

from grader.classroom.folders import ASSIGNMENT, TRANSLATED
from grader.classroom.untrusted import csv_cell, private_file

COLUMNS = ["assignment", "language", "duedate", "timestamp", "student_id", "last_name", "first_name", "email",
           "raw_score", "late_submission_penalty", "score", "max_score"]
EDITIONS = {ASSIGNMENT: "en", **TRANSLATED}  # the course's assignment in each language: one grade between them


class OneCourseCsvExport(CsvExportPlugin):
    """nbgrader's CSV export, one row per student for the course's assignment whatever language they took."""

    def export(self, gradebook: Any) -> None:  # noqa: D102 (nbgrader's)
        dest = self.to or "grades.csv"
        students = [s for s in gradebook.students if not self.student or s.id in map(str, self.student)]
        wanted = {str(a) for a in self.assignment}
        assignments = [a for a in gradebook.assignments if not wanted or a.name in wanted
                       or (a.name in EDITIONS and ASSIGNMENT in wanted)]
        editions = [a for a in assignments if a.name in EDITIONS]
        self.log.info("Exporting grades to %s (the course's assignment once per student, in the language taken: %s)",
                      dest, ", ".join(a.name for a in editions) or "none")
        with private_file(dest, "w") as fh:
            out = csv.writer(fh)
            out.writerow(COLUMNS)
            if editions:
                for student in students:
                    out.writerow(self._course_row(gradebook, editions, student))
            for assignment in assignments:
                if assignment.name in EDITIONS:
                    continue
                for student in students:
                    out.writerow(self._row(assignment, student, "", assignment.name,
                                           self._submission(gradebook, assignment, student)))

    def _course_row(self, gradebook: Any, editions: list[Any], student: Any) -> list[Any]:
        taken = [(found, assignment) for assignment in editions
                 if (found := self._submission(gradebook, assignment, student)) is not None]
        if not taken:  # submitted nothing: one 0 row, as nbgrader writes for a missing submission
            return self._row(editions[0], student, "", ASSIGNMENT, None)
        if len(taken) > 1:
            self.log.warning("%s submitted %s: the latest one is exported", student.id,
                             " and ".join(a.name for _, a in taken))
        submission, assignment = max(taken, key=lambda pair: str(pair[0].timestamp or ""))
        return self._row(assignment, student, EDITIONS[assignment.name], ASSIGNMENT, submission)

    @staticmethod
    def _submission(gradebook: Any, assignment: Any, student: Any) -> Any:
        try:
            return gradebook.find_submission(assignment.name, student.id)
        except MissingEntry:
            return None

    @staticmethod
    def _row(assignment: Any, student: Any, language: str, name: str, submission: Any) -> list[Any]:
        """nbgrader's columns for ``submission`` (None: not submitted, 0 points), plus the language."""
        if submission is None:
            timestamp, raw, penalty, score = "", 0.0, 0.0, 0.0
        else:
            penalty = submission.late_submission_penalty
            timestamp, raw = submission.timestamp, submission.score
            score = max(0.0, submission.score - penalty)
        values = [name, language, assignment.duedate, timestamp, student.id, student.last_name, student.first_name,
                  student.email, raw, penalty, score, assignment.max_score]
        return [csv_cell("" if v is None else str(v)) for v in values]
