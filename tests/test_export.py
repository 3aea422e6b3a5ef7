"""``nbgrader export`` of a course taught in two languages (issue 30, major 5): one row per student for the course's
assignment, in the language they took, never a 0 row for the other edition; other assignments as nbgrader exports
them; the file is the instructor's only, and a name with a comma stays one field."""

from __future__ import annotations

import csv
import logging
import os
import stat
import sysconfig
from pathlib import Path

from nbgrader.api import Gradebook

from grader.classroom.plugins.export import OneCourseCsvExport


def _gradebook(path: Path) -> str:
    url = f"sqlite:///{path}"
    with Gradebook(url) as gb:
        for name in ("autograd", "autograd-zh", "hw2"):
            gb.add_assignment(name)
            gb.add_notebook("nb", name)
            gb.add_grade_cell("ex", "nb", name, max_score=57, cell_type="code")
        gb.add_student("ada", first_name="Ada", last_name="Lovelace, Countess")
        gb.add_student("mei")
        gb.add_student("sam")  # submitted nothing
        for student, assignment, points in (("ada", "autograd", 50), ("mei", "autograd-zh", 57), ("ada", "hw2", 10)):
            gb.add_submission(assignment, student)
            grade = gb.find_grade("ex", "nb", assignment, student)
            grade.manual_score = points
            gb.db.commit()
    return url


def _export(url: str, dest: Path, **traits) -> list[dict[str, str]]:
    plugin = OneCourseCsvExport(to=str(dest), **traits)
    plugin.log = logging.getLogger("test-export")
    with Gradebook(url) as gb:
        plugin.export(gb)
    return list(csv.DictReader(open(dest, encoding="utf-8")))


def test_each_student_has_one_row_for_the_course_in_the_language_they_took(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", os.pathsep.join([sysconfig.get_path("scripts"), os.environ.get("PATH", "")]))
    url = _gradebook(tmp_path / "gradebook.db")  # (nbgrader runs the venv's alembic when it creates one)
    rows = _export(url, tmp_path / "grades.csv")
    course = {r["student_id"]: r for r in rows if r["assignment"] == "autograd"}
    assert not [r for r in rows if r["assignment"] == "autograd-zh"], rows
    assert set(course) == {"ada", "mei", "sam"} and len([r for r in rows if r["assignment"] == "autograd"]) == 3
    assert (course["ada"]["language"], course["ada"]["score"], course["ada"]["max_score"]) == ("en", "50.0", "57.0")
    assert (course["mei"]["language"], course["mei"]["score"], course["mei"]["max_score"]) == ("zh", "57.0", "57.0")
    assert (course["sam"]["language"], course["sam"]["score"], course["sam"]["timestamp"]) == ("", "0.0", "")
    assert course["ada"]["last_name"] == "Lovelace, Countess"  # one field (nbgrader's own export split it in two)
    other = {r["student_id"]: r["score"] for r in rows if r["assignment"] == "hw2"}
    assert other == {"ada": "10.0", "mei": "0.0", "sam": "0.0"}  # another assignment: as nbgrader exports it
    assert stat.S_IMODE((tmp_path / "grades.csv").stat().st_mode) == 0o600
    # --assignment autograd: the course's row only; --student: those students only
    only = _export(url, tmp_path / "only.csv", assignment=["autograd"], student=["mei"])
    assert [(r["assignment"], r["student_id"], r["language"]) for r in only] == [("autograd", "mei", "zh")]


def test_the_course_configures_this_exporter():
    from traitlets.config.loader import PyFileConfigLoader

    root = Path(__file__).resolve().parent.parent
    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    assert config.ExportApp.plugin_class == "grader.classroom.plugins.export.OneCourseCsvExport"


def test_formgraders_students_page_counts_the_course_once(tmp_path, monkeypatch):
    """formgrader showed every student "57 / 114" (nbgrader sums every assignment's points, the course's two
    languages included): the course's formgrader extension counts it once (issue 30, major 5)."""
    monkeypatch.setenv("PATH", os.pathsep.join([sysconfig.get_path("scripts"), os.environ.get("PATH", "")]))
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    from grader.classroom import formgrader_escape

    url = _gradebook(tmp_path / "gradebook.db")  # autograd and autograd-zh 57 each, hw2 57
    api = NbGraderAPI(coursedir=CourseDirectory(root=str(tmp_path), db_url=url))
    monkeypatch.setattr(NbGraderAPI, "get_students", NbGraderAPI.get_students)  # (undone after the test)
    assert {s["id"]: s["max_score"] for s in api.get_students()} == {"ada": 171.0, "mei": 171.0, "sam": 171.0}
    assert formgrader_escape.count_the_course_once()
    students = {s["id"]: s for s in api.get_students()}
    assert {s: v["max_score"] for s, v in students.items()} == {"ada": 114.0, "mei": 114.0, "sam": 114.0}
    assert (students["ada"]["score"], students["mei"]["score"]) == (60.0, 57.0)  # (scores as nbgrader sums them)
