"""formgrader's pages with every value escaped (issue 29, item 6): a Jupyter server extension of the course's.

nbgrader 0.9.6 renders formgrader's pages with a jinja2 ``Environment`` made without autoescape
(``FormgradeExtension.init_tornado_settings``), and writes ids into them as they are: the header's
``<li class="active">{{ student_id }}</li>`` and ``var student_id = "{{ student_id }}";`` in a script. A student
id is the name of a folder in ``submitted/`` (or of a submission in the exchange): a folder named
``x"</script><script>...`` ran its script in the instructor's browser, with the instructor's session. This extension
turns autoescape on in that environment (every value formgrader puts in its pages is text: ids, paths, the
configuration shown in a ``<pre>``), whichever of the two extensions the server loads first.

It also mends formgrader's page for an unknown address (``Template404``, the target of every broken formgrader link):
nbgrader raises the 404 before jupyter_server has authenticated the request, and rendering the error page then asked
for the user the old way, so the server logged "Uncaught exception in write_error ... Calling
`Template404.get_current_user()` directly is deprecated" and the browser got no page. The request is now
authenticated first (jupyter_server's own ``prepare``), then answered 404 with the server's page.

And it counts the course once in formgrader's students page: nbgrader summed the points of every assignment of the
gradebook, so with the course in two languages (``autograd`` and ``autograd-zh``, one submission per student) every
student was shown "57 / 114" (issue 30). The course's assignment counts once, at its editions' maximum; other
assignments as nbgrader counts them.

Enabled for every Jupyter server of the environment by ``make install`` (``grader.classroom.lab.write_settings``
writes ``etc/jupyter/jupyter_server_config.d/autograd-course-formgrader.json``).
"""

from __future__ import annotations

import inspect
from typing import Any

CONFIG_NAME = "autograd-course-formgrader.json"
CONFIG = {"ServerApp": {"jpserver_extensions": {"grader.classroom.formgrader_escape": True}}}


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "grader.classroom.formgrader_escape"}]


def _replace_once(owner: Any, name: str, make: Any) -> None:
    """``owner.name`` replaced by ``make(original)``, once per process whichever of the course's entry points asks
    first (the server extension, a test): a second call finds the replacement marked and leaves it."""
    original = getattr(owner, name)
    if getattr(original, "_course_replacement", False):
        return
    replacement = make(original)
    replacement._course_replacement = True
    setattr(owner, name, replacement)


def escape_formgrader_pages() -> bool:
    """Make formgrader's page environment escape every value, now and for every formgrader started later in this
    process; False when nbgrader is not installed."""
    try:
        from nbgrader.server_extensions.formgrader.formgrader import FormgradeExtension
    except ImportError:
        return False

    def make(original: Any) -> Any:
        def init_tornado_settings(self: Any, webapp: Any) -> None:
            original(self, webapp)
            environment = webapp.settings.get("nbgrader_jinja2_env")
            if environment is not None:
                environment.autoescape = True
        return init_tornado_settings

    _replace_once(FormgradeExtension, "init_tornado_settings", make)
    return True


def mend_not_found_page() -> bool:
    """formgrader's 404 handler authenticates before answering (see the module's docstring); False without nbgrader."""
    try:
        from nbgrader.server_extensions.formgrader import handlers
        from tornado import web
    except ImportError:
        return False

    def make(original: Any) -> Any:
        async def prepare(self: Any) -> None:
            parent = super(handlers.Template404, self).prepare()
            if inspect.isawaitable(parent):
                await parent
            raise web.HTTPError(404)
        return prepare

    _replace_once(handlers.Template404, "prepare", make)
    return True


def count_the_course_once() -> bool:
    """formgrader's students' maximum with the course's assignment counted once across its languages (see the
    module's docstring); False without nbgrader."""
    try:
        from nbgrader.apps.api import NbGraderAPI
    except ImportError:
        return False

    def make(original: Any) -> Any:
        def get_students(self: Any) -> list[dict[str, Any]]:
            from nbgrader.api import Assignment

            from grader.classroom.folders import ASSIGNMENTS

            students = original(self)
            with self.gradebook as gb:
                tops = {name: float(top or 0.0) for name, top in gb.db.query(Assignment.name, Assignment.max_score)}
            naive = sum(tops.values())  # what nbgrader shows every student of the gradebook
            editions = [tops[name] for name in ASSIGNMENTS if name in tops]
            course = sum(top for name, top in tops.items() if name not in ASSIGNMENTS) + max(editions, default=0.0)
            for student in students:
                if student.get("max_score") == naive:
                    student["max_score"] = course
            return students
        return get_students

    _replace_once(NbGraderAPI, "get_students", make)
    return True


def _load_jupyter_server_extension(serverapp: Any) -> None:
    escape_formgrader_pages()
    mend_not_found_page()
    count_the_course_once()
    environment = serverapp.web_app.settings.get("nbgrader_jinja2_env")  # formgrader loaded before this extension
    if environment is not None:
        environment.autoescape = True
