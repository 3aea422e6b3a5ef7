"""The class report: its numbers are the class's (counts per diagnosis equal what was planted)."""

from __future__ import annotations

import csv
import json
import random

from grader import report


def plant(tmp_path, seed: int = 7):
    """A synthetic class: 40 students, each with random mistakes; returns (scores, planted, results dir)."""
    rng = random.Random(seed)
    mistakes = {"square": ["forgot_grad_output", "wrong_sign"], "linear": ["transposed_gradient", "gradient_not_reduced"],
                "sinh": ["intermediates_on_ctx"]}
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
