"""The class list (issue 30, item 3): `make roster CSV=...` reads the CSVs an LMS exports into nbgrader's student
table; `make scores` and `nbgrader export` then show every enrolled student, "not submitted" for those the
gradebook has nothing of (a misnamed folder, or nothing handed in), instead of leaving them out."""

from __future__ import annotations

import csv
import logging
import os
import sysconfig
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from grader.classroom import gradebook, roster
from grader.classroom.plugins.export import OneCourseCsvExport

NBGRADER = "id,first_name,last_name,email\nada,Ada,Lovelace,ada@example.org\nbob,Bob,,\n"
MOODLE = "First name,Last name,ID number,Username,Email address\nAda,Lovelace,17,ada,ada@example.org\nBob,B,18,bob,\n"
CANVAS = ('Student,ID,SIS User ID,SIS Login ID,Section,autograd (123)\n'
          '    Points Possible,,,,,57\n"Lovelace, Ada",1,s1,ada,A,50\n"B, Bob",2,s2,bob,A,\n"Student, Test",3,,,A,\n')


@pytest.mark.parametrize("text", [NBGRADER, MOODLE, CANVAS], ids=["nbgrader", "moodle", "canvas"])
def test_an_lms_class_list_is_read_as_ids_and_names(tmp_path, text):
    path = tmp_path / "students.csv"
    path.write_text(text, encoding="utf-8")
    students = roster.read_roster(path)
    assert [s["id"] for s in students] == ["ada", "bob"]
    assert (students[0]["first_name"], students[0]["last_name"]) == ("Ada", "Lovelace")


def test_a_file_without_ids_is_refused_with_what_to_give(tmp_path):
    path = tmp_path / "students.csv"
    path.write_text("name,grade\nAda,1\n", encoding="utf-8")
    with pytest.raises(roster.RosterError) as caught:
        roster.read_roster(path)
    assert "no column of student ids" in str(caught.value) and "'id'" in str(caught.value)


def test_every_enrolled_student_has_a_row_in_the_table_and_the_export(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", os.pathsep.join([sysconfig.get_path("scripts"), os.environ.get("PATH", "")]))
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as gb:  # (nbgrader runs the venv's alembic when it creates one)
        for name in ("autograd", "autograd-zh"):
            gb.add_assignment(name)
            gb.add_notebook("nb", name)
            gb.add_grade_cell("linear", "nb", name, max_score=6, cell_type="code")
        gb.add_student("ada")
        gb.add_submission("autograd", "ada")
        gb.find_grade("linear", "nb", "autograd", "ada").manual_score = 6
        gb.db.commit()
    path = tmp_path / "students.csv"
    path.write_text(NBGRADER + "erin,Erin,E,\n", encoding="utf-8")
    assert roster.import_roster(url, roster.read_roster(path)) == (2, 1)
    assert roster.import_roster(url, roster.read_roster(path)) == (0, 3)  # again: nothing new, names kept
    assert gradebook.enrolled_without_submission(url, ("autograd", "autograd-zh")) == ["bob", "erin"]
    table, languages = gradebook.class_scores(url, ("autograd", "autograd-zh"), with_enrolled=True)
    shown = gradebook.render_scores(table, languages)
    lines = {line.split()[0]: line for line in shown.splitlines()[2:]}
    assert set(lines) == {"ada", "bob", "erin"} and lines["bob"].rstrip().endswith("not submitted"), shown
    assert lines["ada"].rstrip().endswith("6/6"), shown
    assert set(gradebook.class_scores(url, ("autograd", "autograd-zh"))[0]) == {"ada"}  # (the report's: unchanged)
    plugin = OneCourseCsvExport(to=str(tmp_path / "grades.csv"))
    plugin.log = logging.getLogger("test-roster")
    with Gradebook(url) as gb:
        plugin.export(gb)
    rows = {r["student_id"]: r for r in csv.DictReader(open(tmp_path / "grades.csv", encoding="utf-8"))}
    assert set(rows) == {"ada", "bob", "erin"} and rows["bob"]["score"] == "0.0" and rows["ada"]["score"] == "6.0"
    assert Path(tmp_path / "grades.csv").is_file()


def test_canvas_own_id_is_kept_for_the_canvas_export(tmp_path):
    path = tmp_path / "students.csv"
    path.write_text(CANVAS, encoding="utf-8")
    assert [s["lms_user_id"] for s in roster.read_roster(path)] == ["1", "2"]
    path.write_text(MOODLE, encoding="utf-8")
    assert [s["lms_user_id"] for s in roster.read_roster(path)] == ["", ""]  # (Moodle's ID number is not Canvas's)


def test_a_misnamed_folder_is_told_the_rename_of_its_own_language(tmp_path):
    """Issue 30 minor: bob's English notebooks in Autograd/ were told "rename it to submitted/bob/autograd-zh/" by
    the Chinese run; the folder's language is read from its notebooks, and only that language's run names it."""
    import json

    from grader.classroom import course

    (tmp_path / "solutions" / "autograd").mkdir(parents=True)
    (tmp_path / "solutions" / "autograd-zh").mkdir(parents=True)
    for student, folder, language in (("bob", "Autograd", None), ("wu", "autograd_zh", "zh")):
        where = tmp_path / "submitted" / student / folder
        where.mkdir(parents=True)
        metadata = {"autograd_course": {"language": language}} if language else {}
        (where / "01_autograd_basics.ipynb").write_text(json.dumps({"cells": [], "metadata": metadata,
                                                                    "nbformat": 4, "nbformat_minor": 5}))
    names = {"01_autograd_basics.ipynb"}
    english, chinese = course.misplaced(tmp_path, "autograd", names), course.misplaced(tmp_path, "autograd-zh", names)
    assert set(english) == {"bob"} and "rename it to submitted/bob/autograd/" in english["bob"], english
    assert set(chinese) == {"wu"} and "rename it to submitted/wu/autograd-zh/" in chinese["wu"], chinese
