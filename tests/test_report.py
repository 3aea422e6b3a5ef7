"""The class report: its numbers are the class's (counts per diagnosis equal what was planted)."""

from __future__ import annotations

import csv
import json
import random
import re

from grader.classroom import report


def plant(tmp_path, seed: int = 7):
    """A synthetic class: 40 students, each with random mistakes; returns (scores, planted, results dir)."""
    rng = random.Random(seed)
    mistakes = {"square": ["forgot_grad_output", "wrong_sign"], "linear": ["transposed_gradient", "gradient_not_reduced"],
                "sinh": ["intermediates_not_outputs"]}
    planted: dict[tuple[str, str], set[str]] = {}
    scores: report.Scores = {}
    results = tmp_path / "grader_results"
    for n in range(40):
        student = f"s{n:02d}"
        exercises, row = {}, {}
        for exercise, options in mistakes.items():
            made = [m for m in options if rng.random() < 0.3]
            cells = [{"grade_id": f"{exercise}-first-order", "points": 0.0 if made else 2.0, "max_points": 2.0,
                      "status": "failed" if made else "passed",
                      # the same mistake seen by a visible and a hidden check counts once per student
                      "findings": [{"mistake": m, "title": f"✗ {exercise} · first derivatives: {m} sentence", "hidden": h}
                                   for m in made for h in (False, True)]}]
            for m in made:
                planted.setdefault((exercise, m), set()).add(student)
            exercises[exercise] = {"score": cells[0]["points"], "max_score": 2.0, "cells": cells}
            row[exercise] = (cells[0]["points"], 2.0)
        scores[student] = row
        folder = results / "autograd" / student
        folder.mkdir(parents=True)
        (folder / "nb.json").write_text(json.dumps({"exercises": exercises}))
    return scores, planted, results


def test_counts_per_diagnosis_equal_what_was_planted(tmp_path):
    scores, planted, results = plant(tmp_path)
    found = report.diagnoses_from_results(results, "autograd")
    assert {(d.exercise, d.mistake): d.students for d in found} == planted
    counts = [d.count for d in found]
    assert counts == sorted(counts, reverse=True), "most frequent first"
    assert all(d.title.endswith("sentence") for d in found), "the sentence students read, without the ✗ prefix"


def test_csvs_and_page_carry_the_same_numbers(tmp_path):
    scores, planted, results = plant(tmp_path)
    found = report.diagnoses_from_results(results, "autograd")
    out = tmp_path / "reports"
    out.mkdir()
    scores_csv, diagnoses_csv = report.write_csvs(scores, found, out)
    rows = list(csv.DictReader(open(diagnoses_csv)))
    assert {(r["exercise"], r["mistake"]): (int(r["students"]), set(r["who"].split())) for r in rows} == {
        k: (len(v), v) for k, v in planted.items()}
    score_rows = {r["student"]: r for r in csv.DictReader(open(scores_csv))}
    assert len(score_rows) == 40 and all(float(score_rows[s]["square"]) == scores[s]["square"][0] for s in scores)
    page = report.render_html(scores, found, report.plots(scores, found), "Class report")
    assert page.count("data:image/png;base64,") == 2, "distribution and diagnoses plots are embedded"
    top = found[0]
    assert f"<td><b>{top.count}</b></td>" in page and ", ".join(sorted(top.students)) in page
    assert "http://" not in page and "https://" not in page, "self-contained: nothing to download"


# --- submissions flagged for review (tampering attempts the grader saw) -------------------------------------

FLAGS = {  # (student, notebook) -> flags saved by TrustedExecute
    ("s03", "03_double_backward"): [{"cell": "square-first-order", "what": "gc.get_referrers"},
                                    {"cell": "cell 7", "what": "ctypes.memmove"}],
    ("s11", "01_autograd_basics"): [{"cell": "vjp-check", "what": "sys.settrace"}],
}


def plant_flags(results, flags=FLAGS):
    for (student, notebook), found in flags.items():
        folder = results / "autograd" / student
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{notebook}.json").write_text(json.dumps({"exercises": {}, "flags": found}))
    clean = results / "autograd" / "s20"
    clean.mkdir(parents=True, exist_ok=True)
    (clean / "02_custom_function.json").write_text(json.dumps({"exercises": {}, "flags": []}))
    (clean / "old.json").write_text(json.dumps({"exercises": {}}))  # saved before flags existed
    (clean / "bad.json").write_text(json.dumps({"exercises": {}, "flags": ["not a flag", {"cell": 3}]}))


def test_flags_are_read_from_the_saved_results(tmp_path):
    results = tmp_path / "grader_results"
    plant_flags(results)
    rows = report.flags_from_results(results, "autograd")
    assert [(f.student, f.notebook, f.cell, f.what) for f in rows] == [
        ("s03", "03_double_backward", "square-first-order", "gc.get_referrers"),
        ("s03", "03_double_backward", "cell 7", "ctypes.memmove"),
        ("s11", "01_autograd_basics", "vjp-check", "sys.settrace"),
    ], "malformed flags are skipped, never invented"
    assert report.flagged_submissions(rows) == 2


def test_flags_csv_and_the_report_section(tmp_path):
    scores, _, results = plant(tmp_path)
    plant_flags(results)
    rows = report.flags_from_results(results, "autograd")
    out = tmp_path / "reports"
    out.mkdir()
    path = report.write_flags_csv(rows, out)
    assert path == out / "flags.csv"
    assert [tuple(r.values()) for r in csv.DictReader(open(path))] == [
        (f.student, f.notebook, f.cell, f.what) for f in rows]
    assert list(csv.DictReader(open(path)).fieldnames) == ["student", "notebook", "cell", "what"]
    page = report.render_html(scores, [], {}, "Class report", flags=rows)
    section = page.split("<h2>Flagged submissions</h2>", 1)[1].split("<h2>", 1)[0]
    assert all(f.student in section and f.what in section and f.cell in section for f in rows)
    assert "2 submission(s) flagged for review" in section

    empty = report.render_html(scores, [], {}, "Class report", flags=[])
    section = empty.split("<h2>Flagged submissions</h2>", 1)[1].split("<h2>", 1)[0]
    assert "No submission was flagged for review" in section
    none_csv = report.write_flags_csv([], out)
    assert list(csv.reader(open(none_csv))) == [["student", "notebook", "cell", "what"]]


def test_the_report_escapes_what_students_control(tmp_path):
    results = tmp_path / "grader_results"
    plant_flags(results, {("s01", "nb"): [{"cell": "<b>x</b>", "what": "<script>alert(1)</script>"}]})
    page = report.render_html({}, [], {}, "r", flags=report.flags_from_results(results, "autograd"))
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_scores_end_with_the_flagged_line(tmp_path, monkeypatch, capsys):
    from grader.classroom import course

    plant_flags(tmp_path / "grader_results")
    monkeypatch.setattr(course, "class_scores", lambda db, assignments=course.ASSIGNMENTS, **_: (
        {"s03": {"square": (2.0, 6.0)}}, {"s03": "en"}))
    assert course.main(["scores", "--db", f"sqlite:///{tmp_path / 'gradebook.db'}"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1] == f"2 submission(s) flagged for review: see {tmp_path / 'reports' / 'flags.csv'}"
    assert len(list(csv.DictReader(open(tmp_path / "reports" / "flags.csv")))) == 3

    clean = tmp_path / "clean"
    clean.mkdir()
    assert course.main(["scores", "--db", f"sqlite:///{clean / 'gradebook.db'}"]) == 0
    assert "flagged" not in capsys.readouterr().out


def test_autograde_logs_one_warning_per_flagged_notebook(tmp_path, monkeypatch):
    import logging

    import nbformat

    from grader.classroom import nbgrader_plugins
    from grader.classroom.plugins import trusted_execute
    from grader.judge import runner

    flagged = runner.NotebookResult("s03/autograd/03_double_backward", "the gradebook",
                                    flags=FLAGS[("s03", "03_double_backward")])
    monkeypatch.setattr(trusted_execute, "_CLASSROOM", nbgrader_plugins._Classroom())
    trusted_execute._CLASSROOM.unsandboxed = True  # nothing starts: grading itself is replaced below
    monkeypatch.setattr(nbgrader_plugins.TrustedExecute, "_trusted_cells", staticmethod(lambda *a: {}))
    monkeypatch.setattr(runner, "grade_cells", lambda *a, **k: flagged)
    records: list[logging.LogRecord] = []
    log = logging.getLogger("test-flags")
    handler = logging.Handler()
    handler.emit = records.append
    log.addHandler(handler)
    plugin = nbgrader_plugins.TrustedExecute(log=log, parallel=False, allow_unsandboxed=True)
    info = {"student": "s03", "assignment": "autograd", "notebook": "03_double_backward",
            "db_url": f"sqlite:///{tmp_path / 'gradebook.db'}"}
    plugin.preprocess(nbformat.v4.new_notebook(), {"nbgrader": info})
    warnings = [r.getMessage() for r in records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert all(part in warnings[0] for part in ("s03", "03_double_backward", "square-first-order",
                                                "gc.get_referrers", "cell 7", "ctypes.memmove")), warnings[0]
    assert "flagged for review" in warnings[0]


def test_not_attempted_and_unreadable_are_listed_apart_and_unreadable_once_per_notebook(tmp_path):
    """Issue 21: stubs are not mistakes; an unreadable notebook is one row under its name, not one per exercise."""
    results = tmp_path / "grader_results" / "autograd"
    for student, findings in {"blank": "not_implemented", "bad": "unreadable_submission"}.items():
        (results / student).mkdir(parents=True)
        exercises = {e: {"cells": [{"grade_id": f"{e}-values", "findings": [{"mistake": findings, "title": "t"}]}]}
                     for e in ("vjp", "accumulate", "secondderiv")}
        (results / student / "01_autograd_basics.json").write_text(json.dumps({"exercises": exercises}))
    found = report.diagnoses_from_results(tmp_path / "grader_results", "autograd")
    unreadable = [d for d in found if d.kind == "unreadable"]
    assert [(d.exercise, d.students) for d in unreadable] == [("01_autograd_basics", {"bad"})]
    assert {d.exercise for d in found if d.kind == "not_attempted"} == {"vjp", "accumulate", "secondderiv"}
    page = report.render_html({}, found, {}, "r")
    mistakes = page.split('<table id="mistakes">', 1)[1].split("</table>", 1)[0]
    assert "not_implemented" not in mistakes and "unreadable" not in mistakes
    assert page.split('<table id="unreadable">', 1)[1].split("</table>", 1)[0].count("<tr>") == 2


def test_the_report_over_both_assignments_shows_each_students_language_and_stays_english(tmp_path):
    """Issue 23: English and Chinese-speaking students in one report: a column "lang" (page and scores.csv), a
    mistake's students named with their language, and every sentence English, even one only a Chinese notebook
    showed (its student read it in Chinese)."""
    results = tmp_path / "grader_results"

    def saved(assignment: str, student: str, mistake: str, title: str) -> None:
        folder = results / assignment / student
        folder.mkdir(parents=True)
        finding = {"exercise": "square", "check": "first derivatives", "mistake": mistake, "title": title,
                   "hidden": False}
        cells = [{"grade_id": "square-first-order", "points": 0.0, "max_points": 2.0, "status": "failed",
                  "findings": [finding]}]
        (folder / "03_double_backward.json").write_text(json.dumps(
            {"exercises": {"square": {"score": 0.0, "max_score": 2.0, "cells": cells}}}, ensure_ascii=False),
            encoding="utf-8")

    saved("autograd-zh", "mei", "forgot_grad_output", "✗ square · 一阶导数：`x` 的梯度忽略了 grad_output：它只等于导数本身。")
    saved("autograd", "chen", "forgot_grad_output",
          "✗ square · first derivatives: the gradient for `x` ignores grad_output: it equals the derivative alone.")
    saved("autograd-zh", "wen", "wrong_sign", "✗ square · 一阶导数：`x` 的梯度符号错了。")
    found = {d.mistake: d for d in report.diagnoses_from_results(results, ("autograd", "autograd-zh"))}
    assert found["forgot_grad_output"].students == {"chen", "mei"}
    assert found["forgot_grad_output"].title == "the gradient for `x` ignores grad_output: it equals the derivative alone."
    assert found["wrong_sign"].title == "the gradient for `{name}` has the wrong sign.", "the English sentence"
    assert [d.mistake for d in report.diagnoses_from_results(results, "autograd")] == ["forgot_grad_output"]

    scores = {s: {"square": (0.0, 2.0)} for s in ("chen", "mei", "wen")}
    languages = {"chen": "en", "mei": "zh", "wen": "zh"}
    page = report.render_html(scores, list(found.values()), {}, "Class report: autograd, autograd-zh",
                              languages=languages)
    assert not re.search(r"[\u4e00-\u9fff]", page), "the report is English"
    assert "3 students (1 English, 2 Chinese)" in page
    assert "<th>student</th><th>lang</th>" in page and "<tr><td>mei</td><td>zh</td>" in page
    assert "<td>chen, mei (zh)</td>" in page and "<td>wen (zh)</td>" in page
    out = tmp_path / "reports"
    out.mkdir()
    scores_csv, _ = report.write_csvs(scores, list(found.values()), out, languages)
    assert {r["student"]: r["lang"] for r in csv.DictReader(open(scores_csv, encoding="utf-8"))} == languages


def test_the_score_table_shows_each_students_language():
    from grader.classroom import course

    table = course.render_scores({"ada": {"square": (6.0, 6.0)}, "mei": {"square": (2.0, 6.0)}},
                                 {"ada": "en", "mei": "zh"})
    header, _, ada, mei = table.split("\n")
    assert header.split() == ["student", "lang", "square", "total"]
    assert ada.split() == ["ada", "en", "6/6", "6/6"] and mei.split() == ["mei", "zh", "2/6", "2/6"]


def test_a_mistake_only_a_chinese_student_made_reads_filled_in_english():
    """The report's sentence for a finding of a translated notebook is the English message filled with the fields
    the finding kept (issue 30: "{cls}" and "{attrs}" were shown unfilled)."""
    from grader.spec import messages
    from grader.spec.findings import Finding

    with messages.using("zh"):
        finding = Finding("square", "first derivatives", "output_after_function", fields={"cls": "Square", "after": "`* 1`"})
        saved = finding.as_dict()
    assert "Square" in saved["title"] and "the result went through" not in saved["title"]  # (the student's: Chinese)
    english = report._english_title(saved)
    assert english == "the result went through `* 1` after your Square: autograd would differentiate that part for " \
                      "you, so the checks could not score your backward alone.", english
