"""Several nbgrader processes, one PostgreSQL gradebook (issue 10, part 2): `make autograde JOBS=N`.

Here: splitting the class into disjoint groups, refusing SQLite for more than one process in one line that says what
to do, hiding a gradebook's socket from the sandbox, and the PostgreSQL server a test starts (``postgres_url``:
Debian's initdb and pg_ctl, in a temporary folder, as an unprivileged user, on a Unix socket only; skipped with the
reason where PostgreSQL is not installed, and failing instead in CI). The end-to-end run, 3 nbgrader processes
writing one PostgreSQL gradebook with their notebooks graded on Dask workers, which must equal the gradebook one
process writes to SQLite cell by cell, with the score table, feedback, the class report and `nbgrader export`
reading it, is in tests/test_cluster.py (the scale-out docs/cluster.md gives a big class, tested as a whole).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import nbformat
import pytest

from grader.classroom import course, postgres
from grader.isolation import sandbox

REPO = course.REPO
JOBS = 3


# --- fast: splitting the class, refusing SQLite, hiding the server ----------------------------------------------


def test_the_class_is_split_into_disjoint_groups_balanced_by_notebooks():
    notebooks = {f"s{i:03d}": (1 if i % 5 == 0 else 3) for i in range(50)}
    groups = course.split_class(notebooks, 4)
    assert len(groups) == 4
    everyone = [s for g in groups for s in g]
    assert sorted(everyone) == sorted(notebooks) and len(everyone) == len(set(everyone))
    loads = [sum(notebooks[s] for s in g) for g in groups]
    assert max(loads) - min(loads) <= 3, loads
    assert all(g[0] in sorted(notebooks)[:4] for g in groups), "every group starts at the top of the class"
    assert course.split_class({"a": 3, "b": 3}, 4) == [["a"], ["b"]], "never more processes than students"
    assert course.worker_shares(2, 2) == [1, 1] and course.worker_shares(8, 3) == [3, 3, 2]
    assert course.worker_shares(2, 4) == [1, 1, 1, 1]


def test_several_processes_on_a_sqlite_gradebook_are_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("GRADER_DB_URL", raising=False)
    (tmp_path / "submitted" / "ada" / course.ASSIGNMENT).mkdir(parents=True)
    (tmp_path / "submitted" / "ada" / course.ASSIGNMENT / "01_autograd_basics.ipynb").write_text("{}")
    with pytest.raises(SystemExit) as stop:
        course.main(["autograde", "--root", str(tmp_path), "--jobs", "2"])
    message = str(stop.value.code)
    assert "\n" not in message and "SQLite" in message and "GRADER_DB_URL" in message, message
    assert "postgresql+psycopg://" in message and "grader.classroom.postgres start" in message and "JOBS=1" in message
    assert not (tmp_path / "gradebook.db").exists() and not (tmp_path / course.LOG_NAME).exists(), \
        "nothing was started"


def test_a_gradebook_on_a_unix_socket_is_hidden_from_the_sandbox():
    assert sandbox.gradebook_folder("sqlite:////srv/course/gradebook.db") == Path("/srv/course")
    assert sandbox.gradebook_folder("postgresql+psycopg://u@/gb?host=/srv/pg/socket&port=5432") == Path("/srv/pg/socket")
    assert sandbox.gradebook_folder("postgresql://u@%2Fsrv%2Fpg/gb") == Path("/srv/pg")
    assert sandbox.gradebook_folder("postgresql+psycopg://u:secret@db.example.org:5432/gb") is None
    assert Path("/srv/pg/socket") in sandbox.course_hidden("/srv/course", "postgresql://u@/gb?host=/srv/pg/socket")
    assert course.shown_url("postgresql+psycopg://u:secret@db.example.org/gb") == "postgresql+psycopg://u:***@db.example.org/gb"


# --- end to end: 3 processes, one PostgreSQL gradebook ------------------------------------------------------------


@pytest.fixture(scope="module")
def postgres_url():
    """A PostgreSQL server of its own, in a temporary folder, stopped (and deleted) at the end whatever happens."""
    try:
        postgres.binaries()
        postgres.server_user()
    except postgres.Unavailable as why:
        pytest.skip(f"no PostgreSQL server can run here: {why}")
    folder = Path(tempfile.mkdtemp(prefix="gradebook-postgres-"))
    os.chmod(folder, 0o755)  # the server's user must reach its folder inside
    server = postgres.LocalPostgres(folder / "server")
    try:
        yield server.start()
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in course.nbgrader_env().items() if k not in ("GRADER_DB_URL", "GRADER_JOBS")}
    return {**env, **extra}


def _run(command: list[str], env: dict[str, str], timeout: float = 900) -> str:
    done = subprocess.run(command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout)
    assert done.returncode == 0, f"$ {' '.join(command)}\n{done.stdout[-5000:]}"
    return done.stdout


def _gradebook(db_url: str) -> dict[tuple[str, str, str], tuple]:
    """(student, notebook, cell) -> (score, max score, auto score, needs manual grading, auto comment)."""
    from nbgrader.api import Gradebook, MissingEntry

    cells: dict[tuple[str, str, str], tuple] = {}
    with Gradebook(db_url) as gb:
        for student in gb.students:
            try:
                submission = gb.find_submission(course.ASSIGNMENT, student.id)
            except MissingEntry:  # (the demo's Chinese-speaking students hand in autograd-zh)
                continue
            for notebook in submission.notebooks:
                comments = {c.name: c.auto_comment for c in notebook.comments}
                for grade in notebook.grades:
                    cells[(student.id, notebook.name, grade.name)] = (
                        grade.score, grade.max_score, grade.auto_score, grade.needs_manual_grade,
                        comments.get(grade.name))
    return cells


def _verdicts(root: Path) -> dict[tuple[str, str, str], list]:
    """(student, notebook, test cell) -> the outputs of the autograded test cell (its verdict)."""
    found = {}
    for path in sorted((root / "autograded").glob(f"*/{course.ASSIGNMENT}/*.ipynb")):
        for cell in nbformat.read(str(path), as_version=4).cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
                found[(path.parent.parent.name, path.stem, meta["grade_id"])] = cell.outputs
    return found
