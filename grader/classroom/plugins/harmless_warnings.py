"""What nbgrader says: the warnings expected on every run explained once, at their source."""
from __future__ import annotations


def silence_harmless_warnings() -> None:
    """Called from nbgrader_config.py, in nbgrader's process.

    nbgrader 0.9.6's ``Gradebook.add_submission`` builds a new submission (``SubmittedAssignment``, its
    ``SubmittedNotebook``s, ``Grade``s and ``Comment``s) linked to objects already in the database, and reads
    ``submission.assignment.notebooks`` (and each notebook's cells) before it calls ``db.add(submission)``.
    SQLAlchemy 2 no longer cascades the new objects into the session through those links, so the autoflush
    that the read triggers warns "Object of type <SubmittedAssignment> not in session, add operation along
    'Assignment.submissions' will not proceed" (three such warnings per student). The next statement adds the
    submission, and with it every object created in the loop (save-update cascade), and commits: nothing is
    lost, every grade row exists (the gradebook's scores and feedback are read from them). Only these warnings,
    raised from nbgrader.api, are silenced; any other SQLAlchemy warning still reaches the log.
    """
    import warnings

    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings(
        "ignore", category=SAWarning, module=r"nbgrader\.api\Z",
        message=r"Object of type <(SubmittedAssignment|SubmittedNotebook|Grade|Comment)> not in session, "
                r"add operation along '[\w.]+' will not proceed")
