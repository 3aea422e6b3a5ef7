"""``SaveAutoGradesAtOnce``: nbgrader's autograded rows written in one transaction per notebook."""

from __future__ import annotations

from typing import Any

from nbgrader.preprocessors import SaveAutoGrades


class SaveAutoGradesAtOnce(SaveAutoGrades):
    """nbgrader's SaveAutoGrades, writing the same rows in one transaction: the submission's grades and comments
    are read in one query each and committed once, where nbgrader queries and commits once per cell (on SQLite a
    commit is a write to disk: about thirty per notebook, in nbgrader's one serial process). The cells are
    nbgrader's own _add_score and _add_comment, given a Gradebook that finds those rows (``_RowsReadOnce``)."""

    def preprocess(self, nb: Any, resources: Any) -> tuple[Any, Any]:
        from nbgrader.api import BaseCell, Comment, Grade, Gradebook

        info = resources["nbgrader"]
        self.notebook_id, self.assignment_id = info["notebook"], info["assignment"]
        self.student_id, self.db_url = info["student"], info["db_url"]
        gradebook = Gradebook(self.db_url)
        with gradebook:
            db = gradebook.db
            submission = gradebook.find_submission_notebook(self.notebook_id, self.assignment_id, self.student_id)
            grades = dict((name, grade) for grade, name in db.query(Grade, BaseCell.name).join(
                BaseCell, BaseCell.id == Grade.cell_id).filter(Grade.notebook_id == submission.id))
            comments = dict((name, comment) for comment, name in db.query(Comment, BaseCell.name).join(
                BaseCell, BaseCell.id == Comment.cell_id).filter(Comment.notebook_id == submission.id))
            self.gradebook = _RowsReadOnce(gradebook, grades, comments)
            try:
                nb, resources = super(SaveAutoGrades, self).preprocess(nb, resources)  # the cells, as nbgrader's
                db.commit()
            finally:
                self.gradebook = gradebook  # (the rows read go with the façade)
        return nb, resources


class _RowsReadOnce:
    """The Gradebook for SaveAutoGradesAtOnce's cells: find_grade and find_comment from the rows read at once (a
    name not among them goes to the Gradebook, which says MissingEntry as for nbgrader), and a session whose
    commit() only flushes, leaving the one commit to the end of the notebook. Everything else is the Gradebook's."""

    def __init__(self, gradebook: Any, grades: dict[str, Any], comments: dict[str, Any]) -> None:
        self._gradebook, self._grades, self._comments = gradebook, grades, comments
        self.db = _DeferredCommit(gradebook.db)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._gradebook, name)

    def find_grade(self, name: str, notebook: str, assignment: str, student: str) -> Any:
        found = self._grades.get(name)
        return found if found is not None else self._gradebook.find_grade(name, notebook, assignment, student)

    def find_comment(self, name: str, notebook: str, assignment: str, student: str) -> Any:
        found = self._comments.get(name)
        return found if found is not None else self._gradebook.find_comment(name, notebook, assignment, student)


class _DeferredCommit:
    """A session whose commit() waits for SaveAutoGradesAtOnce's one commit; everything else is the session's."""

    def __init__(self, session: Any) -> None:
        self._session = session

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def commit(self) -> None:
        self._session.flush()  # (the rows are written in the transaction, as nbgrader's commit would)
