"""Late work in autograding: the course's due dates and extensions applied, then the penalty policy's points off.

``CourseLatePenalties`` replaces nbgrader's ``AssignLatePenalties`` in the autograde pipeline (nbgrader_config.py):
the same job (each submitted notebook's ``late_submission_penalty`` in the gradebook), with the course's
``deadlines.toml`` copied into the gradebook first (``grader.classroom.deadlines``: nbgrader's own copy of a
student's extension could only be made once the submission was in the gradebook, and a new gradebook lost it), and
one log line per notebook at INFO instead of nbgrader's three warnings (``make autograde`` says one line per late
student at the end, from the gradebook).

``LatePenalty`` is nbgrader's late-submission plugin with the course's policy (``deadlines.Policy``: none, zero, or
a percentage per day late), read from the same file. An instructor may name another nbgrader plugin instead
(``c.CourseLatePenalties.plugin_class``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nbgrader.plugins.latesubmission import LateSubmissionPlugin
from nbgrader.preprocessors import AssignLatePenalties
from nbgrader.plugins.base import BasePlugin
from traitlets import Type

from grader.classroom import deadlines


class LatePenalty(LateSubmissionPlugin):
    """nbgrader's late-submission plugin with the course's policy (deadlines.toml's [late]), which
    ``CourseLatePenalties`` gives it before each notebook."""

    policy = deadlines.Policy()

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float | None:
        return self.policy.points_off(score, total_seconds_late)


class CourseLatePenalties(AssignLatePenalties):
    """nbgrader's AssignLatePenalties, after copying the course's due date and this student's extension into the
    gradebook; its penalty is ``plugin_class``'s (``LatePenalty`` by default here)."""

    plugin_class = Type(LatePenalty, klass=BasePlugin,
                        help="The late policy: LatePenalty's settings, or any nbgrader late-submission plugin"
                        ).tag(config=True)

    def _course_root(self) -> Path:
        root = getattr(getattr(self.parent, "coursedir", None), "root", None)
        return Path(root) if root else Path.cwd()

    def preprocess(self, nb: Any, resources: Any) -> tuple[Any, Any]:
        from nbgrader.api import Gradebook

        info = resources["nbgrader"]
        notebook_id, assignment_id, student_id = info["notebook"], info["assignment"], info["student"]
        self.init_plugin()
        root = self._course_root()
        try:
            deadline = deadlines.for_assignment(deadlines.load(root), assignment_id)
            if isinstance(self.plugin_inst, LatePenalty):
                self.plugin_inst.policy = deadlines.load_policy(root)
        except deadlines.DeadlineError as exc:  # (make autograde reads the file first and stops on this)
            self.log.error("%s: the due dates were not applied: %s", student_id, exc)
            deadline = None
        with Gradebook(info["db_url"]) as gradebook:
            deadlines.apply(gradebook, assignment_id, deadline, [student_id])
            submission = gradebook.find_submission(assignment_id, student_id)
            notebook = gradebook.find_submission_notebook(notebook_id, assignment_id, student_id)
            late = submission.total_seconds_late
            penalty = None
            if late > 0:
                penalty = self.plugin_inst.late_submission_penalty(student_id, notebook.score, late)
                if penalty is not None:
                    penalty = self._check_late_penalty(notebook, penalty)
                self.log.info("%s/%s/%s: late by %s (due %s UTC%s): %s", student_id, assignment_id, notebook_id,
                              deadlines.describe_duration(submission.timestamp - submission.duedate),
                              f"{submission.assignment.duedate:%Y-%m-%d %H:%M}",
                              f" + an extension of {deadlines.describe_duration(submission.extension)}"
                              if submission.extension else "",
                              f"penalty {penalty:g} of {notebook.score:g} points" if penalty else "no penalty")
            if notebook.late_submission_penalty != penalty:
                notebook.late_submission_penalty = penalty
            gradebook.db.commit()
        return nb, resources
