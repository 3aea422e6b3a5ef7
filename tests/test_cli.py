"""`grader grade`: one notebook, no course directory, per-exercise scores as text or JSON."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import nbformat
import pytest

from conftest import EXAMPLES, RELEASE, REPO, SOLUTIONS, nbgrader_meta
from grader.course import build_submission, mistake_source

GRADER = [sys.executable, "-m", "grader.cli"]


def grade(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*GRADER, "grade", *args], capture_output=True, text=True, cwd=REPO, timeout=300)


def full_marks(name: str) -> float:
    nb = nbformat.read(str(SOLUTIONS / name), as_version=4)
    return sum(nbgrader_meta(c).get("points", 0) for c in nb.cells if nbgrader_meta(c).get("grade"))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["02_custom_function.ipynb", "03_double_backward.ipynb"])
def test_solutions_get_full_marks_and_stubs_zero(name):
    solved = json.loads(grade(str(SOLUTIONS / name), "--json").stdout)
    assert solved["score"] == solved["max_score"] == full_marks(name)
    blank = json.loads(grade(str(RELEASE / name), "--json").stdout)
    assert blank["score"] == 0 and blank["max_score"] == full_marks(name)
    assert blank["tests_from"].endswith(f"solutions/autograd/{name}"), "hidden tests come from the solutions"
    messages = [c["message"] for e in blank["exercises"].values() for c in e["cells"]]
    assert all("is not implemented yet" in m for m in messages), messages


@pytest.mark.slow
def test_text_report_names_exercises_and_what_to_fix(tmp_path):
    build_submission(RELEASE, {"square": mistake_source(EXAMPLES / "mistakes" / "square-forgot-grad-out.py")}, tmp_path)
    done = grade(str(tmp_path / "03_double_backward.ipynb"), "--tests", str(SOLUTIONS / "03_double_backward.ipynb"))
    assert done.returncode == 0, done.stderr
    assert "square      2/6" in done.stdout
    assert "ignores grad_output" in done.stdout and "What to fix:" in done.stdout


@pytest.mark.slow
def test_a_crash_keeps_the_points_checked_before_it(tmp_path):
    """os._exit in a later answer cell must not cost the exercises already checked."""
    solved = nbformat.read(str(SOLUTIONS / "03_double_backward.ipynb"), as_version=4)
    for cell in solved.cells:
        if nbgrader_meta(cell).get("grade_id") == "sinh":
            cell.source = "import os\nos._exit(3)"
    path = tmp_path / "03_double_backward.ipynb"
    nbformat.write(solved, str(path))
    report = json.loads(grade(str(path), "--json").stdout)
    assert report["exercises"]["square"]["score"] == 6 and report["exercises"]["exp"]["score"] == 6
    assert report["exercises"]["sinh"]["score"] == 0 and report["exercises"]["cube"]["score"] == 0
    assert "exit code 3" in report["problem"] and "cell sinh" in report["problem"]
    assert {c["status"] for c in report["exercises"]["cube"]["cells"]} == {"not run"}


@pytest.mark.slow
def test_a_timeout_stops_the_notebook_and_says_so(tmp_path):
    nb = nbformat.read(str(RELEASE / "02_custom_function.ipynb"), as_version=4)
    for cell in nb.cells:
        if nbgrader_meta(cell).get("grade_id") == "linear":
            cell.source = "while True:\n    pass"
    path = tmp_path / "02_custom_function.ipynb"
    nbformat.write(nb, str(path))
    report = json.loads(grade(str(path), "--json", "--timeout", "15").stdout)
    assert report["score"] == 0 and "did not finish within 15 s" in report["problem"]


def test_missing_file_is_a_clear_error(tmp_path):
    done = grade(str(tmp_path / "nope.ipynb"))
    assert done.returncode == 2 and "does not exist" in done.stderr
