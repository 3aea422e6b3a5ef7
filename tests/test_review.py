"""What an instructor grading a class reviews afterwards (issue 30, item 9): tampered test cells, changed points and
deleted cells flagged, every warning naming its student, every run's log kept.

One small class, graded once by `make autograde` (then again, and `make report`) in a temporary course built as
tests/test_grading_day.py builds one: edith edited the test cell that catches her mistake, pat gave a test cell 100
points (and pasted a second copy of an answer cell), dell deleted a test cell, dana deleted an answer cell, and hal
is honest, his notebooks as JupyterLab saves them (its metadata, outputs, whitespace at the ends of lines).
"""

from __future__ import annotations

import copy
import csv
import os
import re
import shutil
import stat
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from conftest import EXAMPLES, read_entry
from grader.classroom import course, nbgrader_run
from grader.classroom.demo_class import mistake_source
from test_grading_day import _course, make

NOTEBOOK = "03_double_backward"
SQUARE_MISTAKE = read_entry(EXAMPLES / "mistakes" / "square-detach.py")  # passes all but square-second-order
STUDENTS = ("dana", "dell", "edith", "hal", "pat")


def _edit(root: Path, student: str, change, notebook: str = NOTEBOOK) -> None:
    """``change(nb)`` applied to ``student``'s submitted notebook."""
    path = root / "submitted" / student / course.ASSIGNMENT / f"{notebook}.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    change(nb)
    nbformat.write(nb, str(path))


def _cell(nb, grade_id: str):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def _without(grade_id: str):
    def change(nb) -> None:
        nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") != grade_id]
    return change


def _as_jupyterlab_saves_it(nb) -> None:
    """An honest student's notebook after a session in JupyterLab: the kernel's metadata, every cell run (outputs,
    execution counts, timings), outputs collapsed, answers typed with blank lines and trailing spaces, and a test
    cell with a trailing space and a final newline (an editor's "trim whitespace" or "final newline" settings)."""
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.2", "mimetype": "text/x-python"}
    nb.metadata.setdefault("kernelspec", {})["display_name"] = "Python 3 (ipykernel)"
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    for number, cell in enumerate(nb.cells):
        meta = cell.metadata.get("nbgrader", {})
        cell.metadata.update(collapsed=False, jupyter={"outputs_hidden": number % 2 == 0}, tags=[])
        if cell.cell_type == "code":
            cell.metadata["execution"] = {"iopub.status.idle": "2026-11-20T10:00:01.000Z"}
            cell.execution_count = number
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ran\n")]
        if meta.get("solution"):
            cell.source = "\n\n" + "\n".join(line + "   " for line in cell.source.split("\n")) + "\n\n"
    tests = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    tests[0].source = tests[0].source.replace("\n", "  \n", 1) + "\n"


@pytest.fixture(scope="module")
def graded():
    """The class graded: (course, `make autograde`'s output, a second `make autograde`'s output)."""
    folder = Path(tempfile.mkdtemp(prefix="review-"))
    os.chmod(folder, 0o755)  # (the sandbox user reaches the submissions)
    try:
        root = _course(folder / "course", {student: course.ASSIGNMENT for student in STUDENTS})
        # edith's square answer is a catalogued mistake; the test cell that catches it now says "fine"
        _edit(root, "edith", lambda nb: (setattr(_cell(nb, "square"), "source", mistake_source(SQUARE_MISTAKE.path)),
                                         setattr(_cell(nb, "square-second-order"), "source", 'print("fine")')))

        def worth_100(nb) -> None:
            _cell(nb, "square-first-order").metadata["nbgrader"]["points"] = 100
            answer = _cell(nb, "square")
            pasted = copy.deepcopy(answer)
            pasted["id"] = "pasted-copy"
            nb.cells.insert(nb.cells.index(answer) + 1, pasted)
        _edit(root, "pat", worth_100)
        _edit(root, "dell", _without("exp-structure"))
        _edit(root, "dana", _without("sinh"))
        for notebook in ("01_autograd_basics", "02_custom_function", NOTEBOOK, "04_modern_functions",
                         "05_markers_and_capstone"):
            _edit(root, "hal", _as_jupyterlab_saves_it, notebook)
        first = make(root, "autograde")
        assert first.returncode == 0, first.stdout[-4000:]
        again = make(root, "autograde")
        assert again.returncode == 0, again.stdout[-4000:]
        report = make(root, "report")
        assert report.returncode == 0, report.stdout[-4000:]
        yield root, first.stdout, again.stdout
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _flags(root: Path, student: str) -> list[dict[str, str]]:
    with open(root / "reports" / "flags.csv", encoding="utf-8") as f:
        return [row for row in csv.DictReader(f) if row["student"] == student]


def _flagged_section(root: Path) -> str:
    page = (root / "reports" / "class-report.html").read_text(encoding="utf-8")
    return page.split("<h2>Flagged submissions</h2>", 1)[1].split("<h2>", 1)[0]


def _scores(root: Path) -> dict[str, dict[str, tuple[float, float]]]:
    return course.gradebook_scores(f"sqlite:///{root / 'gradebook.db'}")


def _warnings(out: str, student: str) -> list[str]:
    return [line.strip() for line in out.splitlines()
            if line.strip().startswith("warning: ") and f"{student}/{course.ASSIGNMENT}/" in line]


def _released_cells() -> dict:
    """grade_id -> the test cells of the notebook as released."""
    return {c.metadata["nbgrader"]["grade_id"]: c
            for c in nbformat.read(str(course.REPO / "notebooks" / course.ASSIGNMENT / f"{NOTEBOOK}.ipynb"), 4).cells
            if c.metadata.get("nbgrader", {}).get("grade")}


def _assert_flagged(root: Path, out: str, student: str, cell: str, *words: str) -> None:
    """``student`` has exactly one flag, on ``cell`` of the notebook, saying ``words``, in flags.csv, the class
    report and the terminal's one warning line for it."""
    rows = _flags(root, student)
    assert [(r["notebook"], r["cell"]) for r in rows] == [(NOTEBOOK, cell)], rows
    assert all(word in rows[0]["what"] for word in words), rows[0]
    assert f"<td>{student}</td><td>{NOTEBOOK}</td><td><code>{cell}</code></td>" in _flagged_section(root)
    said = [line for line in _warnings(out, student) if cell in line]
    assert len(said) == 1 and said[0].startswith(f"warning: {student}/{course.ASSIGNMENT}/{NOTEBOOK}: ") \
        and "flagged for review" in said[0] and all(word in said[0] for word in words), out


@pytest.mark.slow
def test_an_edited_test_cell_is_flagged_and_its_checks_still_run(graded):
    root, out, _ = graded
    _assert_flagged(root, out, "edith", "square-second-order", "test cell", "edited", "put back and graded")
    points = {g: float(c.metadata["nbgrader"]["points"]) for g, c in _released_cells().items()}
    earned = sum(points[f"square-{suffix}"] for suffix, outcome in SQUARE_MISTAKE.expect.items() if outcome == "pass")
    assert _scores(root)["edith"]["square"] == (earned, 6.0), "the instructor's test cell caught her mistake"
    assert earned < 6.0


@pytest.mark.slow
def test_changed_points_are_flagged_and_the_instructors_kept(graded):
    root, out, _ = graded
    _assert_flagged(root, out, "pat", "square-first-order", "points changed to 100", "worth 2")
    scores = _scores(root)
    assert scores["pat"]["square"] == (6.0, 6.0)
    assert sum(m for _, m in scores["pat"].values()) == sum(m for _, m in scores["hal"].values()), "out of the same"


@pytest.mark.slow
def test_a_deleted_test_cell_is_flagged_and_graded(graded):
    root, out, _ = graded
    _assert_flagged(root, out, "dell", "exp-structure", "test cell", "deleted", "put back and graded")
    assert _scores(root)["dell"]["exp"] == (6.0, 6.0)


@pytest.mark.slow
def test_a_deleted_answer_cell_is_flagged(graded):
    root, out, _ = graded
    _assert_flagged(root, out, "dana", "sinh", "answer cell", "deleted")
    assert _scores(root)["dana"]["sinh"] == (0.0, 6.0)


@pytest.mark.slow
def test_an_honest_notebook_as_jupyterlab_saves_it_gets_no_flag_and_no_warning(graded):
    root, out, _ = graded
    assert _flags(root, "hal") == []
    assert ">hal<" not in _flagged_section(root)
    assert _warnings(out, "hal") == [], out
    assert all(s == m for s, m in _scores(root)["hal"].values()), _scores(root)["hal"]


@pytest.mark.slow
def test_make_autograde_and_make_scores_count_the_flagged_submissions(graded):
    root, out, again = graded
    line = f"4 submission(s) flagged for review: see {root / 'reports' / 'flags.csv'}"
    assert line in out.splitlines() and line in again.splitlines(), out
    assert "4 submission(s) flagged for review: see reports/flags.csv" in make(root, "scores").stdout.splitlines()
    assert "4 submission(s) flagged for review" in _flagged_section(root)


# --- every warning names its student ----------------------------------------------------------------------------


@pytest.mark.slow
def test_every_warning_of_make_autograde_names_its_student(graded):
    root, out, _ = graded
    said = [line.strip() for line in out.splitlines() if line.strip().startswith(("warning: ", "error: "))]
    assert said and all(re.match(rf"(warning|error): ({'|'.join(STUDENTS)})/{course.ASSIGNMENT}/\w+: ", line)
                        for line in said), "\n".join(said)
    # nbgrader's own line for pat's pasted copy of his answer cell names nobody in nbgrader's log
    log = (root / "logs").glob("*-autograde.log")
    assert any("] Cell with id 'square' exists multiple times!" in p.read_text() for p in log)
    assert f"warning: pat/{course.ASSIGNMENT}/{NOTEBOOK}: Cell with id 'square' exists multiple times!" in said


def _fake_nbgrader(tmp_path: Path, lines: list[str]) -> list[str]:
    """A process printing ``lines`` as nbgrader's output, as one job of several: what the terminal got."""
    import io
    from contextlib import redirect_stdout

    script = tmp_path / "fake.py"
    script.write_text("import sys\nsys.stdout.write(%r)\n" % "".join(f"{line}\n" for line in lines))
    runner = nbgrader_run.Nbgrader(tmp_path, command="autograde")
    job = nbgrader_run.Job("job 1/2", [sys.executable, str(script)], runner.log, latest=runner.latest)
    shown = io.StringIO()
    with redirect_stdout(shown):
        runner.run_jobs([job])
    return [line.strip() for line in shown.getvalue().splitlines()]


def test_a_warning_logged_while_a_student_is_graded_is_said_with_that_notebook(tmp_path):
    submitted = tmp_path / "submitted" / "tom" / course.ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    said = _fake_nbgrader(tmp_path, [
        f"[AutogradeApp | INFO] Converting notebook {tmp_path}/solutions/./{course.ASSIGNMENT}/{NOTEBOOK}.ipynb",
        "[AutogradeApp | WARNING] an instructor's notebook's warning",
        f"[AutogradeApp | INFO] Sanitizing {submitted}",
        "[AutogradeApp | WARNING] Cell with id 'square' exists multiple times!",
        f"[AutogradeApp | WARNING] tom/{course.ASSIGNMENT}/{NOTEBOOK}: test cell x was edited (flagged for review)",
        "[AutogradeApp | WARNING] grading ahead stopped (OSError: gone); the rest is graded one notebook at a time",
        f"[AutogradeApp | WARNING] ann/{course.ASSIGNMENT}/01_autograd_basics: not graded ahead (OSError: gone)",
        f"[AutogradeApp | INFO] Autograding {tmp_path}/autograded/tom/{course.ASSIGNMENT}/{NOTEBOOK}.ipynb",
        "[AutogradeApp | ERROR] something failed",
        "[nbgrader_job | INFO] recorded: tom",
        "[AutogradeApp | WARNING] after the student",
    ])
    assert said == [
        "warning: job 1/2: an instructor's notebook's warning",
        f"warning: job 1/2: tom/{course.ASSIGNMENT}/{NOTEBOOK}: Cell with id 'square' exists multiple times!",
        f"warning: job 1/2: tom/{course.ASSIGNMENT}/{NOTEBOOK}: test cell x was edited (flagged for review)",
        "warning: job 1/2: grading ahead stopped (OSError: gone); the rest is graded one notebook at a time",
        f"warning: job 1/2: ann/{course.ASSIGNMENT}/01_autograd_basics: not graded ahead (OSError: gone)",
        f"error: job 1/2: tom/{course.ASSIGNMENT}/{NOTEBOOK}: something failed",
        "warning: job 1/2: after the student",
    ]


# --- every run's log is kept ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_two_autograde_runs_leave_two_logs_and_nbgrader_log_is_the_latest(graded):
    root, out, again = graded
    runs = sorted((root / "logs").glob("*-autograde.log"))
    assert len(runs) == 2, sorted(p.name for p in (root / "logs").iterdir())
    assert str(runs[0]) in out and str(runs[1]) in again, "each run names its own log at the end"
    assert "] edith/autograd/03_double_backward: test cell square-second-order was edited" in runs[0].read_text()
    assert "Skipping existing assignment" in runs[1].read_text()
    assert (root / course.LOG_NAME).is_symlink() and (root / course.LOG_NAME).resolve() == runs[1].resolve()
    assert stat.S_IMODE((root / "logs").stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in runs)


def test_a_log_is_never_overwritten_and_the_old_single_log_is_kept(tmp_path):
    (tmp_path / course.LOG_NAME).write_text("the last run before logs/ existed\n")  # (every command rewrote it)
    first = _fake_nbgrader(tmp_path, ["[AutogradeApp | INFO] one"])
    second = _fake_nbgrader(tmp_path, ["[AutogradeApp | INFO] two"])
    assert first == second == []
    logs = sorted((tmp_path / "logs").iterdir())
    texts = [p.read_text() for p in logs]
    assert len(logs) == 3 and "the last run before logs/ existed\n" in texts, [p.name for p in logs]
    assert sum("] one" in t for t in texts) == sum("] two" in t for t in texts) == 1, "two runs: two logs"
    assert (tmp_path / course.LOG_NAME).resolve() in logs and "] two" in (tmp_path / course.LOG_NAME).read_text()
    runs = [p.name for p, text in zip(logs, texts) if "] one" in text or "] two" in text]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d_\d{6}-autograde(-\d+)?\.log", name) for name in runs), runs
