"""An instructor's grading day (issue 21, problems 1, 2, 4 and 5), through `make autograde` in a temporary course.

The course is a folder with the repository's solutions/ and Makefile's inputs linked in (`make -f <repo>/Makefile`
runs there, as in a clone), and a small class: ada (right), bob (his folder named Autograd/), cleo (notebook 3
renamed by a browser download) and dan (an answer cell and a test cell deleted).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from conftest import SOLUTIONS
from grader.classroom import course

REPO = course.REPO
RELEASE = REPO / "notebooks" / course.ASSIGNMENT


def _course(folder: Path, students: dict[str, str]) -> Path:
    """A course folder: solutions/ and make's inputs linked, submitted/<student>/<folder>/ built from the release."""
    folder.mkdir(parents=True)
    os.chmod(folder, 0o755)
    # grader/ too, as in a clone: `python -m grader.classroom.course` run there imports this checkout's grader, not the one the
    # venv was installed from (a git worktree sharing another checkout's .venv would test that checkout's code)
    for name in ("solutions", ".venv", "grader", "requirements.lock", "pyproject.toml"):
        os.symlink(REPO / name, folder / name)
    for student, where in students.items():
        _hand_in(folder, student, where)
    return folder


def _hand_in(folder: Path, student: str, where: str = "autograd", slow: bool = False) -> None:
    """The instructor's answers as ``student``'s submission; ``slow``: the last notebook takes seconds more (a sleep
    before the hvp answer: waiting, not computing, so the rest of the suite keeps the cores)."""
    answers = course.answer_sources(SOLUTIONS)
    if slow:
        answers["hvp"] = "import time\ntime.sleep(6)\n" + answers["hvp"]
    shutil.rmtree(folder / "submitted" / student / where, ignore_errors=True)
    course.build_submission(RELEASE, answers, folder / "submitted" / student / where)


@pytest.fixture
def scratch():
    folder = Path(tempfile.mkdtemp(prefix="grading-day-"))
    os.chmod(folder, 0o755)  # (the sandbox user reaches the submissions)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GRADER_DB_URL", "GRADER_JOBS", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    return {**env, "PYTHONPATH": "", **extra}


def make(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", "-f", str(REPO / "Makefile"), *args], cwd=root,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=900, env=env or _env())


def _without_table(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.strip()]


def _scores(root: Path, db_url: str = "") -> dict[str, dict[str, tuple[float, float]]]:
    return course.gradebook_scores(db_url or f"sqlite:///{root / 'gradebook.db'}")


@pytest.mark.slow
def test_left_out_folders_files_and_cells_are_said_counted_and_force_and_assignment_work(scratch):
    root = _course(scratch / "course", {"ada": "autograd", "bob": "Autograd", "cleo": "autograd", "dan": "autograd"})
    cleo = root / "submitted" / "cleo" / "autograd"
    os.rename(cleo / "03_double_backward.ipynb", cleo / "03_double_backward (1).ipynb")
    dan = root / "submitted" / "dan" / "autograd"
    for name, gone in (("02_custom_function.ipynb", "linear"), ("03_double_backward.ipynb", "exp-structure")):
        nb = nbformat.read(str(dan / name), as_version=4)
        nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") != gone]
        nbformat.write(nb, str(dan / name))

    # the class list (issue 30): bob's folder is misnamed, erin handed in nothing; both are enrolled
    (scratch / "students.csv").write_text("id,first_name,last_name\nada,Ada,A\nbob,Bob,B\ncleo,Cleo,C\n"
                                          "dan,Dan,D\nerin,Erin,E\n", encoding="utf-8")
    listed = make(root, "roster", f"CSV={scratch / 'students.csv'}")
    assert listed.returncode == 0 and "roster: 5 students" in listed.stdout, listed.stdout
    done = make(root, "autograde")
    out = done.stdout
    assert done.returncode == 0, out[-4000:]
    assert "enrolled, nothing submitted: 2 student(s) of the class list (bob, erin)" in out, out
    table = make(root, "scores").stdout
    assert [line.split()[0] for line in table.splitlines() if line.rstrip().endswith("not submitted")] == \
        ["bob", "erin"], table
    lines = out.splitlines()
    bob = [line for line in lines if "bob" in line and not line.startswith("enrolled, nothing submitted")]
    assert len(bob) == 1 and "submitted/bob/Autograd/" in bob[0] and "rename it to submitted/bob/autograd/" in bob[0], out
    renamed = [line for line in lines if "03_double_backward (1).ipynb" in line]
    assert len(renamed) == 1 and "cleo" in renamed[0] and "rename it to 03_double_backward.ipynb" in renamed[0], out
    assert "Skipping unknown notebook" not in out and "No submitted file" not in out, out
    deleted = [line for line in lines if line.strip().startswith("warning: dan/autograd/")]
    assert any("02_custom_function" in line and "answer cell linear" in line for line in deleted), out
    assert any("03_double_backward" in line and "test cell exp-structure" in line for line in deleted), out
    assert "Missing grade cell" not in out, out
    others = [line for line in lines if line.strip().startswith("warning") and line not in bob + renamed + deleted]
    assert not others, out  # (the cell nbgrader puts back had no id: nbformat's MissingIDFieldWarning, 26 Nov)
    assert "autograde: 17/17 notebooks graded" in out, out  # ada 6, cleo 5, dan 6; bob left out
    assert any(line.startswith("left out: 1 student folder(s) misnamed, 1 notebook file(s) misnamed") for line in lines), out
    assert set(_scores(root)) == {"ada", "cleo", "dan"}

    forced = make(root, "autograde", "FORCE=1")
    assert forced.returncode == 0, forced.stdout[-4000:]
    assert "Removing existing assignment:" not in forced.stdout, forced.stdout
    force_lines = [line for line in forced.stdout.splitlines() if "FORCE" in line]
    assert len(force_lines) == 1 and "of 3 students were removed and graded again" in force_lines[0], forced.stdout
    assert "autograde: 17/17 notebooks graded" in forced.stdout, forced.stdout

    again = make(root, "autograde")
    assert "autograde: 0/0 notebooks graded" in again.stdout and "3 students (17 notebooks) autograded before" \
        in again.stdout and "FORCE=1" in again.stdout, again.stdout

    # issue 30: the rename the warning told, then a plain rerun, grades that notebook (it kept its 0 before)
    assert _scores(root)["cleo"]["square"][0] == 0
    os.rename(cleo / "03_double_backward (1).ipynb", cleo / "03_double_backward.ipynb")
    renamed_run = make(root, "autograde")
    assert renamed_run.returncode == 0 and "autograde: 6/6 notebooks graded" in renamed_run.stdout, renamed_run.stdout
    assert "(cleo): they are graded again" in renamed_run.stdout, renamed_run.stdout
    assert _scores(root)["cleo"]["square"][0] > 0, _scores(root)["cleo"]
    # STUDENT=: one student graded again, the others left as they are
    before = (root / "autograded" / "dan" / "autograd" / "02_custom_function.ipynb").stat().st_mtime_ns
    one = make(root, "autograde", "STUDENT=ada")
    assert one.returncode == 0 and "autograde: 6/6 notebooks graded" in one.stdout, one.stdout
    assert (root / "autograded" / "dan" / "autograd" / "02_custom_function.ipynb").stat().st_mtime_ns == before
    nobody = make(root, "autograde", "STUDENT=zoe")
    assert nobody.returncode != 0 and "no submission of zoe" in nobody.stdout, nobody.stdout

    other = make(root, "autograde", "ASSIGNMENT=hw1")
    said = [line for line in other.stdout.splitlines() if not re.match(r"make(\[\d+\])?: \*\*\*", line)]
    assert other.returncode != 0 and len(said) == 1 and "no assignment 'hw1'" in said[0] and "autograd" in said[0], \
        other.stdout
    help_text = make(root, "help").stdout
    assert "FORCE=1" in help_text and "ASSIGNMENT=" in help_text and "STUDENT=" in help_text


def test_grader_grade_refuses_a_renamed_course_notebook(tmp_path):
    renamed = tmp_path / "03_double_backward (1).ipynb"
    shutil.copy(RELEASE / "03_double_backward.ipynb", renamed)
    done = subprocess.run([sys.executable, "-m", "grader.classroom.cli", "grade", str(renamed)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    said = done.stderr.strip().splitlines()
    assert len(said) == 1 and "rename it to 03_double_backward.ipynb" in said[0], done.stderr
    assert not done.stdout


def _wait_for(predicate, timeout: float = 300, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.slow
def test_ctrl_c_leaves_every_student_recorded_completely_or_as_before(scratch):
    from nbgrader.api import Gradebook

    root = _course(scratch / "course", {s: "autograd" for s in ("ann", "ben", "cat")})
    first = make(root, "autograde")
    assert first.returncode == 0, first.stdout[-3000:]
    db_url = f"sqlite:///{root / 'gradebook.db'}"
    with Gradebook(db_url) as gb:  # a state the re-run changes for every student: 1 point per cell
        for student in ("ann", "ben", "cat"):
            for notebook in gb.find_submission(course.ASSIGNMENT, student).notebooks:
                for grade in notebook.grades:
                    grade.auto_score = 1.0
        gb.db.commit()
    before = _scores(root)
    (root / course.LOG_NAME).unlink()
    _hand_in(root, "ben", slow=True)  # his last notebook now takes seconds: the Ctrl-C lands in the middle of him

    run = subprocess.Popen(["make", "--no-print-directory", "-f", str(REPO / "Makefile"), "autograde", "FORCE=1"],
                           cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, env=_env(), start_new_session=True)
    try:
        log = root / course.LOG_NAME
        # ann recorded, ben's first notebooks too (his last one takes seconds): Ctrl-C in the middle of ben
        _wait_for(lambda: log.exists() and "ben/autograd/01_autograd_basics:"
                  in log.read_text().partition("recorded: ann")[2], what="ann recorded, ben started")
        os.killpg(run.pid, signal.SIGINT)
        out, _ = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    said = [line for line in out.splitlines() if not re.match(r"make(\[\d+\])?: \*\*\*", line)]
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
    assert said[-1] == "interrupted: 1 students recorded, ben left as before; run make autograde again", out
    after = _scores(root)
    assert after["ann"] != before["ann"] and all(s == m for s, m in after["ann"].values()), "ann: recorded completely"
    assert after["ben"] == before["ben"], "ben: as before the run"
    assert after["cat"] == before["cat"]

    # the plain rerun finishes the interrupted FORCE=1 (issue 30): ben, and cat, whom it had not reached
    rerun = make(root, "autograde")
    assert rerun.returncode == 0, rerun.stdout[-3000:]
    assert "finishing the FORCE=1 run interrupted before: 2 students" in rerun.stdout, rerun.stdout
    assert "autograde: 12/12 notebooks graded" in rerun.stdout, rerun.stdout  # ben and cat (ann: recorded)
    assert all(s == m for s, m in _scores(root)["ben"].values())
    assert all(s == m for s, m in _scores(root)["cat"].values()), "cat: graded again, as FORCE=1 asked"
    assert not (root / f".autograde-force-{course.ASSIGNMENT}").exists()
    assert "0/0 notebooks graded" in make(root, "autograde").stdout  # and then nothing is left to finish


@pytest.mark.slow
def test_a_second_autograde_on_the_same_course_is_refused_and_a_stale_lock_taken_over(scratch):
    import socket

    root = _course(scratch / "course", {"ann": "autograd"})
    (root / course.LOCK_NAME).write_text('{"pid": 999999, "host": "%s", "user": "x", "started": "yesterday"}\n'
                                         % socket.gethostname())
    first = subprocess.Popen(["make", "--no-print-directory", "-f", str(REPO / "Makefile"), "autograde"], cwd=root,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=_env(), start_new_session=True)
    try:
        _wait_for(lambda: str(first.pid) != "" and (root / course.LOCK_NAME).read_text().count("999999") == 0
                  and (root / course.LOCK_NAME).read_text().strip() != "", what="the lock taken")
        second = make(root, "autograde")
        said = [line for line in second.stdout.splitlines() if not re.match(r"make(\[\d+\])?: \*\*\*", line)]
        assert second.returncode != 0 and len(said) == 1, second.stdout
        assert "already running" in said[0] and f"host {socket.gethostname()}" in said[0] and "pid " in said[0], said
        out, _ = first.communicate(timeout=600)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
    assert first.returncode == 0, out[-3000:]
    assert "pid 999999" in out and "taken over" in out, out
    assert _scores(root)["ann"], "the first run graded"
    assert (root / course.LOCK_NAME).read_text() == "", "released"


@pytest.mark.slow
def test_switching_a_graded_class_to_an_empty_postgresql_gradebook_grades_it(scratch, postgres_url):
    # one student (two, both right, graded twice as many notebooks and showed nothing more): her six notebooks
    # autograded into SQLite, then all six graded again into the empty PostgreSQL gradebook
    root = _course(scratch / "course", {"ann": "autograd"})
    assert make(root, "autograde").returncode == 0
    done = make(root, "autograde", env=_env(GRADER_DB_URL=postgres_url))
    out = done.stdout
    assert done.returncode == 0, out[-3000:]
    assert "No autograded submissions" not in out and "autograde: 6/6 notebooks graded" in out, out
    assert "no grades in the gradebook" in out, out
    table = _scores(root, postgres_url)
    assert set(table) == {"ann"} and all(s == m for row in table.values() for s, m in row.values())


from test_gradebook_postgres import postgres_url  # noqa: E402,F401 (its server fixture)
