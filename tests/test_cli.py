"""`grader grade`: one notebook, no course directory, per-exercise scores as text or JSON."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import nbformat
import pytest

from conftest import EXAMPLES, RELEASE, REPO, SOLUTIONS, nbgrader_meta
from grader.classroom.course import build_submission, mistake_source

GRADER = [sys.executable, "-m", "grader.classroom.cli"]


def grade(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*GRADER, "grade", *args], capture_output=True, text=True, cwd=REPO, timeout=300)


def full_marks(name: str) -> float:
    nb = nbformat.read(str(SOLUTIONS / name), as_version=4)
    return sum(nbgrader_meta(c).get("points", 0) for c in nb.cells if nbgrader_meta(c).get("grade"))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["03_double_backward.ipynb"])  # (every notebook: the demo's ada and blank, nbgrader)
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
    assert "ignores the gradient backward receives" in done.stdout and "What to fix:" in done.stdout


@pytest.mark.slow
def test_a_crash_keeps_the_points_checked_before_it(tmp_path):
    """A process that dies in a later answer cell must not cost the exercises already checked. (A student's cell
    cannot call os._exit under the course's policy; the crash comes from a cell the instructor's notebook given
    with --tests also has, which runs as it is, as a crash in torch's C code would.)"""
    solved = nbformat.read(str(SOLUTIONS / "03_double_backward.ipynb"), as_version=4)
    for cell in solved.cells:
        if nbgrader_meta(cell).get("grade_id") == "sinh":
            cell.source = "import os\nos._exit(3)"
    path = tmp_path / "03_double_backward.ipynb"
    nbformat.write(solved, str(path))
    (tmp_path / "instructor").mkdir()
    nbformat.write(solved, str(tmp_path / "instructor" / "03_double_backward.ipynb"))
    report = json.loads(grade(str(path), "--json", "--tests", str(tmp_path / "instructor" / "03_double_backward.ipynb")).stdout)
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
    report = json.loads(grade(str(path), "--json", "--timeout", "5").stdout)
    assert report["score"] == 0 and "did not finish within 5 s" in report["problem"]


def test_missing_file_is_a_clear_error(tmp_path):
    done = grade(str(tmp_path / "nope.ipynb"))
    assert done.returncode == 2 and "does not exist" in done.stderr


# --- bad input: one clear line on stderr, exit status 2, never a traceback (issue 8, item 4) -----------------


def _foreign_notebook() -> nbformat.NotebookNode:
    """A readable notebook of another course: nbgrader cells, none of them ours."""
    return nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Homework 3: data frames"),
        nbformat.v4.new_code_cell("import pandas as pd\ndf = pd.DataFrame()", metadata={"nbgrader": {
            "grade_id": "q1", "solution": True, "grade": False, "locked": False, "schema_version": 3}}),
        nbformat.v4.new_code_cell("assert len(df) == 0", metadata={"nbgrader": {
            "grade_id": "q1-test", "solution": False, "grade": True, "points": 2, "locked": True,
            "schema_version": 3}}),
    ])


def _bad_input(case: str, tmp_path) -> list[str]:
    """The arguments of `grader grade` for one kind of bad input a user can give."""
    name = "03_double_backward.ipynb"  # found in solutions/ by name: its tests apply
    path = tmp_path / name
    if case == "missing file":
        return [str(tmp_path / "nope.ipynb")]
    if case == "a folder":
        return [str(tmp_path)]
    if case == "not JSON":
        path.write_text("print('hello')\n")
    elif case == "empty file":
        path.write_bytes(b"")
    elif case == "binary":
        path.write_bytes(bytes(range(256)))
    elif case == "JSON, not a notebook":
        path.write_text('{"name": "not a notebook"}')
    elif case == "truncated notebook":
        path.write_bytes((RELEASE / name).read_bytes()[:500])
    elif case == "a notebook of another course":
        nbformat.write(_foreign_notebook(), str(path))
    elif case == "another notebook of this course":  # 01's cells under 03's name
        shutil.copy(RELEASE / "01_autograd_basics.ipynb", path)
    elif case == "no matching tests":  # a name no solutions notebook has, and no test cells of its own
        path = tmp_path / "my_homework.ipynb"
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), str(path))
    elif case == "tests without test cells":
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), str(tmp_path / "t.ipynb"))
        return [str(RELEASE / name), "--tests", str(tmp_path / "t.ipynb")]
    elif case == "tests not a notebook":
        (tmp_path / "t.ipynb").write_text("not json")
        return [str(RELEASE / name), "--tests", str(tmp_path / "t.ipynb")]
    elif case == "missing tests":
        return [str(RELEASE / name), "--tests", str(tmp_path / "t.ipynb")]
    elif case == "own tests of another course":
        nbformat.write(_foreign_notebook(), str(path))
        return [str(path), "--own-tests"]
    else:
        raise AssertionError(case)
    return [str(path)]


BAD_INPUTS = ["missing file", "a folder", "not JSON", "empty file", "binary", "JSON, not a notebook",
              "truncated notebook", "a notebook of another course", "another notebook of this course",
              "no matching tests", "tests without test cells", "tests not a notebook", "missing tests",
              "own tests of another course"]


@pytest.mark.parametrize("case", BAD_INPUTS)
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_bad_input_is_one_clear_line_and_exit_status_2(tmp_path, capsys, case, as_json, monkeypatch):
    from grader.classroom import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "grade_notebook", lambda *a, **k: pytest.fail(f"{case}: graded instead of refused"))
    returncode = cli.main(["grade", *_bad_input(case, tmp_path), *(["--json"] if as_json else [])])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert returncode == 2, (case, returncode, err[-3000:])
    assert len(lines) == 1 and lines[0].startswith("grader: "), (case, err[-3000:])
    assert out == "" and len(lines[0]) < 400, (case, out, lines[0])


@pytest.mark.parametrize("case", ["not JSON", "a notebook of another course"])
def test_bad_input_from_the_command_line(tmp_path, case):
    done = grade(*_bad_input(case, tmp_path))
    assert done.returncode == 2 and done.stdout == "", (case, done.returncode, done.stderr[-3000:])
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("grader: "), done.stderr[-3000:]
