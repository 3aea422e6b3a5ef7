"""One database engine per gradebook in an nbgrader process, instead of one per ``Gradebook()``.

nbgrader opens its gradebook (``nbgrader.api.Gradebook``) several times for every notebook it autogrades: the
converter, OverwriteCells, SaveAutoGrades, AssignLatePenalties and our own plugins each open and close one. Each
opening creates a new SQLAlchemy engine, inspects the tables, runs ``create_all`` and checks the course; each
closing disposes of the engine, with its connections and its cache of compiled SQL. So every query of every
notebook is compiled again, and with PostgreSQL every opening is a new connection.

``share()`` (called by ``grader.classroom.nbgrader_job`` before nbgrader runs) keeps the engine of the first opening of each
database URL for the rest of the process: later openings reuse it, its connection pool and its compiled
statements, and skip the schema work the first one did; closing one ends its session only. What nbgrader writes
and reads is unchanged: each opening still has its own session; the course (which nbgrader adds when it is
missing) is checked by the first openings of each course, not again by every later one.
"""

from __future__ import annotations

import threading
from typing import Any

_ENGINES: dict[str, Any] = {}
_COURSES: set[tuple[str, str]] = set()  # (database URL, course id) whose course this process has checked
_LOCK = threading.Lock()


def share() -> None:
    """Make ``nbgrader.api.Gradebook`` reuse one engine per database URL in this process (idempotent)."""
    from nbgrader import api
    from sqlalchemy.orm import scoped_session, sessionmaker

    if getattr(api.Gradebook, "_grader_shares_engines", False):
        return
    first_init, first_close = api.Gradebook.__init__, api.Gradebook.close

    def __init__(self: Any, db_url: str, course_id: str = "default_course", authenticator: Any = None) -> None:
        with _LOCK:
            engine = _ENGINES.get(db_url)
        if engine is None:  # the first opening: nbgrader's own, tables and alembic version included
            first_init(self, db_url, course_id=course_id, authenticator=authenticator)
            with _LOCK:  # (another thread's first opening may have won: then this engine is this opening's own)
                self._grader_shared = _ENGINES.setdefault(db_url, self.engine) is self.engine
            return
        self._grader_shared = True
        self.engine = engine
        self.db = scoped_session(sessionmaker(autoflush=True, bind=engine, future=True))
        if (db_url, course_id) not in _COURSES:  # (a course row, once there, stays: checked once per process)
            self.check_course(course_id=course_id)
            _COURSES.add((db_url, course_id))
        self.course_id = course_id
        self.authenticator = authenticator

    def close(self: Any) -> None:
        if self._grader_shared:
            self.db.remove()  # the session ends; the engine and its connections serve the next opening
        else:
            first_close(self)

    api.Gradebook.__init__ = __init__  # type: ignore[method-assign]
    api.Gradebook.close = close  # type: ignore[method-assign]
    api.Gradebook._grader_shares_engines = True  # type: ignore[attr-defined]


def dispose() -> None:
    """Close the shared engines' connections (at the end of the process)."""
    with _LOCK:
        engines = list(_ENGINES.values())
        _ENGINES.clear()
        _COURSES.clear()
    for engine in engines:
        engine.dispose()
