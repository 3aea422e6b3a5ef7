"""nbgrader round trip: the bundled class through `nbgrader generate_assignment / autograde / generate_feedback`.

The solutions get full marks, untouched notebooks get zero without crashing nbgrader, and each catalogued mistake
loses exactly the points of the checks its catalogue entry says it fails.
"""

from __future__ import annotations

import tomllib

from pathlib import Path

import pytest

from conftest import EXAMPLES, SOLUTIONS, nbgrader_meta, read_entry
from grader import course
from grader.runner import exercise_of

import nbformat


def points_per_cell() -> dict[str, float]:
    return {nbgrader_meta(c)["grade_id"]: float(nbgrader_meta(c)["points"])
            for path in SOLUTIONS.glob("*.ipynb") for c in nbformat.read(str(path), as_version=4).cells
            if nbgrader_meta(c).get("grade")}


def expected_scores() -> dict[str, dict[str, float]]:
    """student -> exercise -> points, derived from students.toml and the catalogue's `# expect:` lines."""
    points = points_per_cell()
    exercises = sorted({exercise_of(g) for g in points})
    full = {e: sum(p for g, p in points.items() if exercise_of(g) == e) for e in exercises}
    spec = tomllib.loads((EXAMPLES / "students.toml").read_text(encoding="utf-8"))
    table = {}
    for student, answers in spec.items():
        row = {e: (full[e] if answers.get("all") == "solution" else 0.0) for e in exercises}
        for exercise, value in answers.items():
            if exercise == "all":
                continue
            if value == "solution":
                row[exercise] = full[exercise]
            else:
                entry = read_entry(EXAMPLES / "mistakes" / value)
                row[exercise] = sum(points[f"{exercise}-{suffix}"] for suffix, outcome in entry.expect.items()
                                    if outcome == "pass")
        table[student] = row
    return table


def test_the_demo_class_has_a_perfect_a_blank_and_several_mistaken_students():
    spec = tomllib.loads((EXAMPLES / "students.toml").read_text(encoding="utf-8"))
    expected = expected_scores()
    totals = {s: sum(row.values()) for s, row in expected.items()}
    top = max(totals.values())
    assert "blank" in spec and totals["blank"] == 0
    assert any(t == top for t in totals.values())
    assert sum(0 < t < top for t in totals.values()) >= 3


@pytest.mark.slow
def test_nbgrader_autogrades_the_bundled_class_to_the_expected_scores(tmp_path, capsys):
    assert course.demo(tmp_path / "course") == 0
    out = capsys.readouterr().out
    got = course.gradebook_scores(f"sqlite:///{tmp_path / 'course' / 'gradebook.db'}")
    expected = expected_scores()
    assert set(got) == set(expected)
    for student, row in expected.items():
        assert {e: got[student][e][0] for e in row} == row, f"{student}: nbgrader's scores differ from the catalogue"
    # Feedback for every student and notebook, and the table printed for the instructor.
    for student in expected:
        assert len(list((tmp_path / "course" / "feedback" / student / "autograd").glob("*.html"))) == 3
    assert "student" in out and "ada" in out and "total" in out
    # Feedback names each hidden check with its outcome and diagnosis, never its code (nbgrader #917).
    page = (tmp_path / "course" / "feedback" / "chen" / "autograd" / "03_double_backward.html").read_text()
    assert "BEGIN HIDDEN TESTS" not in page and "seed=11" not in page
    assert "[hidden check, other inputs] ✗ square · first derivatives: the gradient for `x` ignores grad_output" in page
    # The class report counts the planted mistakes under the students who made them.
    import csv

    rows = list(csv.DictReader(open(tmp_path / "course" / "reports" / "diagnoses.csv")))
    who = {(r["exercise"], r["mistake"]): set(r["who"].split()) for r in rows}
    assert who[("square", "forgot_grad_output")] == {"chen"}
    assert who[("sinh", "intermediates_on_ctx")] == {"chen"}
    assert who[("linear", "transposed_gradient")] == {"dara"}
    assert who[("exp", "tensor_on_ctx")] == {"eli"}
    assert (tmp_path / "course" / "reports" / "class-report.html").stat().st_size > 10_000
    # Autograded notebooks keep what each cell showed in the sandbox, as stock nbgrader does (issue 8, item 1).
    _assert_students_own_outputs_are_kept(tmp_path / "course")


def _assert_students_own_outputs_are_kept(root: Path) -> None:
    import nbformat

    def cells(student: str, name: str) -> list:
        return [c for c in nbformat.read(str(root / "autograded" / student / "autograd" / name), as_version=4).cells
                if c.cell_type == "code"]

    # A cell that raised shows that error, with its traceback (blank: the cells calling its untouched stubs).
    errors = [o for c in cells("blank", "02_custom_function.ipynb") for o in c.outputs if o.output_type == "error"
              and not c.metadata.get("nbgrader", {}).get("grade")]
    assert errors and errors[0].ename == "NotImplementedError" and "linear" in errors[0].evalue, errors
    assert errors[0].traceback, "the error keeps its traceback"
    # A graph cell shows its SVG (as an image: no markup of the student's own reaches the page).
    graphs = [o for c in cells("ada", "03_double_backward.ipynb") for o in c.outputs
              if "text/html" in o.get("data", {}) and "data:image/svg+xml;base64," in o.data["text/html"]]
    assert graphs, "no graph of notebook 3 kept its picture"
    # Prints of teaching cells are there too, and the feedback page shows them.
    printed = [o.text for c in cells("ada", "01_autograd_basics.ipynb") for o in c.outputs if o.output_type == "stream"]
    assert any(text.strip() for text in printed)
    page = (root / "feedback" / "ada" / "autograd" / "03_double_backward.html").read_text()
    assert "data:image/svg+xml;base64," in page
