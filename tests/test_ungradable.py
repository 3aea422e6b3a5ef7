"""Submissions nbgrader cannot read, and a grading environment that cannot start (issue 7, points 4 and 7).

An unreadable submission (not JSON, not a notebook, truncated, empty, binary...) is graded as such: 0 on each of
its test cells with one plain reason naming the file, while every other student of the class is graded as usual
and `nbgrader autograde` succeeds. A sandbox worker that never becomes ready is the grading environment's fault:
the run stops before nbgrader records anything, says why, and exits non-zero.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from grader.classroom import course, nbgrader_plugins
from test_adversarial import AVAILABLE, SOLUTIONS, WHY, _exercises, _solution_cells

needs_sandbox = pytest.mark.skipif(not AVAILABLE, reason=f"sandbox unavailable: {WHY}")

REAL = (SOLUTIONS.parent.parent / "notebooks" / course.ASSIGNMENT / "01_autograd_basics.ipynb").read_bytes()
_NOTEBOOK = json.loads(REAL)

# student -> the bytes of the 01_autograd_basics.ipynb it hands in, and why nbgrader cannot read them
BROKEN: dict[str, bytes] = {
    "b-not-json": b"this is not a notebook {",
    "c-json-list": b"[]",
    "d-nbformat3-garbage": json.dumps({"nbformat": 3, "nbformat_minor": 0, "metadata": {},
                                       "worksheets": "garbage"}).encode(),
    "e-truncated": REAL[: len(REAL) // 2],
    "f-empty": b"",
    "g-cells-not-a-list": json.dumps({**_NOTEBOOK, "cells": {"0": _NOTEBOOK["cells"][0]}}).encode(),
    "h-binary": bytes(range(256)) * 8,
    "i-cells-garbage": json.dumps({**_NOTEBOOK, "cells": [42, "x", None]}).encode(),
}


def _as_saved_by(data: bytes, front_end: str) -> bytes:
    """An honest notebook as an older front end saves it (issue 30): Google Colab's download (format 4.0, its id in
    each cell's metadata, Colab's notebook metadata) or Jupyter before 2021 (format 4.4): no cell ids."""
    nb = json.loads(data)
    nb["nbformat_minor"] = 0 if front_end == "colab" else 4
    for k, cell in enumerate(nb["cells"]):
        cell.pop("id", None)
        if front_end == "colab":
            cell["metadata"]["id"] = f"Xq{k:04d}abc"
    if front_end == "colab":
        nb["metadata"].update({"colab": {"provenance": [], "name": "autograd.ipynb"}, "accelerator": "GPU",
                               "language_info": {"name": "python"}})
    return json.dumps(nb, indent=2).encode()


# honest answers as older front ends save them: read, graded and written back like any other (full marks)
OLDER_FORMATS = {"k-colab-4.0": "colab", "l-jupyter-4.4": "jupyter-4.4"}

# readable, but nbgrader's sanitizing trips over it (OverwriteCells cannot place the missing test cells)
UNPROCESSABLE = {"j-every-cell-deleted": json.dumps({**_NOTEBOOK, "cells": []}).encode()}


# --- reading a submission (fast) -----------------------------------------------------------------------------


@pytest.mark.parametrize("student", sorted(BROKEN))
def test_read_submission_says_why_a_file_is_not_a_notebook(tmp_path, student):
    path = tmp_path / "01_autograd_basics.ipynb"
    path.write_bytes(BROKEN[student])
    with pytest.raises(nbgrader_plugins.UnreadableSubmission) as caught:
        nbgrader_plugins.read_submission(path)
    reason = str(caught.value)
    assert reason and "\n" not in reason and len(reason) < 300, reason


def test_read_submission_reads_real_notebooks(tmp_path):
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        assert nbgrader_plugins.read_submission(path).cells
    old = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    old.nbformat_minor = 4
    del old.cells[0]["id"]
    (tmp_path / "old.ipynb").write_text(json.dumps(old))
    assert nbgrader_plugins.read_submission(tmp_path / "old.ipynb").cells[0].source == "x = 1"


@pytest.mark.parametrize("front_end", sorted(set(OLDER_FORMATS.values())))
def test_a_notebook_without_cell_ids_is_read_as_format_4_5_with_ids(tmp_path, front_end):
    """Colab's 4.0 and Jupyter's 4.4 have no cell ids; nbgrader's copy of such a notebook came back holding the ids
    of the instructor's cells, invalid in 4.4, and every right answer in it scored 0. Read as 4.5: every cell gets a
    unique id, valid for nbformat, and the cells are otherwise as saved."""
    path = tmp_path / "01_autograd_basics.ipynb"
    path.write_bytes(_as_saved_by(REAL, front_end))
    notebook = nbgrader_plugins.read_submission(path)
    assert notebook.nbformat_minor == 5 and len({c.id for c in notebook.cells}) == len(notebook.cells)
    nbformat.validate(notebook)
    assert [c.source for c in notebook.cells] == [c["source"] if isinstance(c["source"], str) else "".join(c["source"])
                                                  for c in _NOTEBOOK["cells"]]
    notebook.cells.insert(0, nbformat.v4.new_code_cell("y = 2"))  # a cell put back by nbgrader keeps its own id
    nbformat.validate(notebook)


@pytest.mark.slow
def test_validate_and_grader_grade_agree_with_autograde_on_older_formats(tmp_path):
    """Issue 30, item 2: a right answer saved as Colab's 4.0 or old Jupyter's 4.4 is full marks through every front
    door, not only make autograde (its class below): `nbgrader validate` says Success and `grader grade` gives 6/6.
    The three commands run at once (each waits on a kernel or a sandbox most of its time)."""
    os.chmod(tmp_path, 0o755)  # (the sandbox user reads the notebooks)
    course.build_submission(SOLUTIONS.parent.parent / "notebooks" / course.ASSIGNMENT,
                            course.answer_sources(SOLUTIONS), tmp_path / "release")
    honest = (tmp_path / "release" / "02_custom_function.ipynb").read_bytes()
    commands = {}
    for front_end in ("colab", "jupyter-4.4"):
        folder = tmp_path / front_end
        folder.mkdir(mode=0o755)
        (folder / "02_custom_function.ipynb").write_bytes(_as_saved_by(honest, front_end))
        commands[f"grade {front_end}"] = ([str(Path(sys.executable).with_name("grader")), "grade",
                                           "02_custom_function.ipynb"], folder)
    commands["validate colab"] = ([str(Path(sys.executable).with_name("nbgrader")), "validate",
                                   "02_custom_function.ipynb"], tmp_path / "colab")
    running = {name: subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
               for name, (argv, cwd) in commands.items()}
    said = {name: process.communicate(timeout=300)[0] for name, process in running.items()}
    for front_end in ("colab", "jupyter-4.4"):
        out = said[f"grade {front_end}"]
        assert running[f"grade {front_end}"].returncode == 0 and "total     6/6" in out, out[-3000:]
    assert "Success! Your notebook passes all the tests." in said["validate colab"], said["validate colab"][-3000:]


# --- end to end: nbgrader autograde on a class with unreadable submissions ------------------------------------


def _autograde(root: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 600) -> tuple[int, str]:
    command = course.nbgrader_command("autograde", course.ASSIGNMENT, "--force", f"--CourseDirectory.root={root}",
                                      "--CourseDirectory.release_directory=release", "--TrustedExecute.timeout=20",
                                      *args)
    done = subprocess.run(command, cwd=course.REPO, env=env or course.nbgrader_env(), capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout)
    return done.returncode, done.stdout + done.stderr


def _hand_in(root: Path, student: str, notebooks: dict[str, bytes]) -> None:
    folder = root / "submitted" / student / course.ASSIGNMENT
    folder.mkdir(parents=True)
    for name, data in notebooks.items():
        (folder / name).write_bytes(data)


def _honest(root: Path, scratch: Path) -> dict[str, bytes]:
    course.build_submission(root / "release" / course.ASSIGNMENT, _solution_cells(), scratch)
    return {p.name: p.read_bytes() for p in sorted(scratch.glob("*.ipynb"))}


@pytest.fixture(scope="module")
def template(released_template):
    return released_template  # (conftest's, made once for the session: every test here copies it)


# tests/test_malformed_reports.py's end-to-end case is a student of this class too (one nbgrader run for both):
# m-malformed hands in an honest notebook 1, and the pool below appends a signed but malformed report line to its
# notebook's reports (issue 29). The pool is the real one for everybody else.
MALFORMING_POOL = '''
from grader.isolation import pool


class MalformingPool(pool.Pool):
    """The real pool, except that the reports of m-malformed's notebooks end with a signed but malformed line."""

    def run_plan(self, plan, timeout):
        data, ended = super().run_plan(plan, timeout)
        if pool.GRADING.get("").startswith("m-malformed/"):
            data += b'\\n{"event": "done", "index": [1], "outputs": [], "error": ""}\\n'
        return data, ended
'''
MALFORMED = "m-malformed"


@pytest.fixture(scope="module")
def unreadable_class(template, tmp_path_factory) -> tuple[Path, int, str]:
    """The class of unreadable submissions (and m-malformed), autograded once: (course, exit status, log)."""
    assert AVAILABLE, f"sandbox unavailable: {WHY}"
    work = tmp_path_factory.mktemp("unreadable")
    root = work / "class"
    shutil.copytree(template, root, symlinks=True)
    honest = _honest(root, work / "built")
    _hand_in(root, "a-honest", honest)
    for student, data in {**BROKEN, **UNPROCESSABLE}.items():
        others = {name: body for name, body in honest.items() if name != "01_autograd_basics.ipynb"}
        _hand_in(root, student, {"01_autograd_basics.ipynb": data, **(others if student == "b-not-json" else {})})
    _hand_in(root, MALFORMED, {"01_autograd_basics.ipynb": honest["01_autograd_basics.ipynb"]})
    for student, front_end in OLDER_FORMATS.items():
        _hand_in(root, student, {name: _as_saved_by(body, front_end) for name, body in honest.items()})
    _hand_in(root, "z-honest", honest)
    plugins = work / "plugins"
    plugins.mkdir()
    (plugins / "malforming.py").write_text(textwrap.dedent(MALFORMING_POOL))
    env = {**course.nbgrader_env(), "PYTHONPATH": str(plugins)}

    returncode, log = _autograde(root, "--TrustedExecute.pool_class=malforming.MalformingPool", env=env)
    return root, returncode, log


@pytest.mark.slow
@needs_sandbox
def test_unreadable_submissions_score_0_with_the_reason_and_the_rest_of_the_class_is_graded(unreadable_class):
    root, returncode, log = unreadable_class

    assert "Removing failed assignment" not in log and "Traceback" not in log, log[-6000:]
    assert returncode == 0, log[-6000:]
    scores = course.gradebook_scores(f"sqlite:///{root / 'gradebook.db'}")
    assert set(scores) == {"a-honest", "z-honest", MALFORMED, *BROKEN, *UNPROCESSABLE, *OLDER_FORMATS}, \
        "every student is in the gradebook"
    for student in ("a-honest", "z-honest", *OLDER_FORMATS):  # (older formats: issue 30, 0 before)
        assert all(score == top > 0 for score, top in scores[student].values()), (student, scores[student])
    first = {e for e, nb in _exercises().items() if nb == "01_autograd_basics.ipynb"}
    for student in [*BROKEN, *UNPROCESSABLE]:
        assert all(scores[student][e][0] == 0 < scores[student][e][1] for e in first), (student, scores[student])
        path = root / "submitted" / student / course.ASSIGNMENT / "01_autograd_basics.ipynb"
        named = str(path.relative_to(root))  # (relative to the course: the student reads it too, issue 21)
        lines = [line for line in log.splitlines() if named in line and "could not be read as a notebook" in line]
        assert lines, f"the log does not name {named}:\n{log[-4000:]}"
        autograded = nbformat.read(str(root / "autograded" / student / course.ASSIGNMENT / path.name), as_version=4)
        verdicts = [" ".join(o.get("evalue", "") for o in c.outputs) for c in autograded.cells
                    if c.get("metadata", {}).get("nbgrader", {}).get("grade")]
        assert verdicts and all("could not be read as a notebook" in v and "re-submit" in v for v in verdicts), verdicts
        assert all(f"{named}:" in v and str(root) not in v for v in verdicts), verdicts
        saved = json.loads((root / "grader_results" / course.ASSIGNMENT / student / "01_autograd_basics.json").read_text())
        assert "could not be read as a notebook" in saved["problem"] and saved["score"] == 0
    assert all(score == top > 0 for e, (score, top) in scores["b-not-json"].items() if e not in first), (
        "the readable notebooks of a student with one unreadable notebook keep their points", scores["b-not-json"])
    done = subprocess.run(course.nbgrader_command("generate_feedback", course.ASSIGNMENT, "--student=f-empty",
                                                  f"--CourseDirectory.root={root}",
                                                  "--CourseDirectory.release_directory=release"),
                          cwd=course.REPO, env=course.nbgrader_env(), capture_output=True, text=True)
    page = (root / "feedback" / "f-empty" / course.ASSIGNMENT / "01_autograd_basics.html").read_text()
    assert done.returncode == 0 and "could not be read as a notebook" in page and "the file is empty" in page
    assert "submitted/f-empty/autograd/01_autograd_basics.ipynb" in page and str(root) not in page, \
        "the student's page names the file relative to the course, never the instructor's absolute path"
    # The class report lists each unreadable submission once, under its notebook (not once per exercise of it),
    # apart from the mistakes (issue 21).
    import csv

    done = subprocess.run([sys.executable, "-m", "grader.classroom.report", "--root", str(root)], cwd=course.REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [r for r in csv.DictReader(open(root / "reports" / "diagnoses.csv", encoding="utf-8"))
            if r["mistake"] == "unreadable_submission"]
    assert [(r["exercise"], r["kind"]) for r in rows] == [("01_autograd_basics", "not graded (unreadable)")], rows
    assert set(rows[0]["who"].split()) == {*BROKEN, *UNPROCESSABLE}, rows
    report = (root / "reports" / "class-report.html").read_text(encoding="utf-8")
    mistakes = report.split('<table id="mistakes">', 1)[1].split("</table>", 1)[0]
    assert "unreadable_submission" not in mistakes and "could not be read" not in mistakes, mistakes[:2000]
    unreadable = report.split('<table id="unreadable">', 1)[1].split("</table>", 1)[0]
    assert unreadable.count("<tr>") == 2 and "01_autograd_basics" in unreadable, unreadable


@pytest.mark.slow
@needs_sandbox
def test_a_malformed_report_costs_only_its_notebook_and_autograde_succeeds(unreadable_class):
    """Issue 29 (tests/test_malformed_reports.py): a signed report line that is not well formed makes m-malformed's
    notebook alone "not graded: grader error" (0 with the reason); nbgrader removes nothing and exits 0, and the
    honest students graded with it keep their points."""
    root, returncode, log = unreadable_class

    assert "Removing failed assignment" not in log and "Traceback" not in log, log[-6000:]
    assert returncode == 0, log[-6000:]
    scores = course.gradebook_scores(f"sqlite:///{root / 'gradebook.db'}")
    notebook = "01_autograd_basics.ipynb"
    first = {e for e, nb in _exercises().items() if nb == notebook}
    for student in ("a-honest", "z-honest"):
        assert all(scores[student][e][0] == scores[student][e][1] > 0 for e in first), (student, scores[student])
    assert all(scores[MALFORMED][e][0] == 0 < scores[MALFORMED][e][1] for e in first), scores[MALFORMED]
    warned = [line for line in log.splitlines() if MALFORMED in line and "not graded: grader error" in line]
    assert warned and "field 'index' must be an integer, not list" in warned[0], log[-4000:]
    autograded = nbformat.read(str(root / "autograded" / MALFORMED / course.ASSIGNMENT / notebook), as_version=4)
    verdicts = [" ".join(o.get("evalue", "") for o in c.outputs) for c in autograded.cells
                if c.get("metadata", {}).get("nbgrader", {}).get("grade")]
    assert verdicts and all(v.startswith("not graded: grader error") for v in verdicts), verdicts


# --- end to end: a sandbox worker that never becomes ready -----------------------------------------------------

NEVER_READY = '''
from grader.isolation import sandbox


class NeverReadyPool:
    """What grader.isolation.pool.Pool raises when its workers exit at once instead of becoming ready."""

    def __init__(self, hide, workers=None, **kwargs):
        raise sandbox.SetupError("grading worker 1 of 2 never became ready: it exited at once with status 1 "
                                 "(python: No module named grader.sandboxed.worker)")


class DiesLaterPool:
    """Starts, then cannot replace a worker: the replacement never becomes ready."""

    size = 1

    def __init__(self, hide, workers=None, **kwargs):
        pass

    def run_plan(self, plan, timeout):
        raise sandbox.SetupError("a replacement grading worker never became ready: it exited at once with status 1")

    def close(self):
        pass
'''


def _autograde_two_honest_students_with(template, tmp_path, pool: str) -> tuple[Path, int, str]:
    """Two honest students, autograded with one of NEVER_READY's stand-in pools: (course, exit status, log)."""
    root = tmp_path / "class"
    shutil.copytree(template, root, symlinks=True)
    honest = _honest(root, tmp_path / "built")
    for student in ("a-honest", "b-honest"):
        _hand_in(root, student, honest)
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "never_ready.py").write_text(textwrap.dedent(NEVER_READY))
    env = {**course.nbgrader_env(), "PYTHONPATH": str(plugins)}
    returncode, log = _autograde(root, f"--TrustedExecute.pool_class=never_ready.{pool}", env=env, timeout=120)
    return root, returncode, log


@pytest.mark.slow
@needs_sandbox
def test_a_worker_that_never_becomes_ready_stops_autograde_before_anything_is_recorded(template, tmp_path):
    from nbgrader.api import Gradebook

    root, returncode, log = _autograde_two_honest_students_with(template, tmp_path, "NeverReadyPool")

    assert returncode != 0, log[-4000:]
    errors = [line for line in log.splitlines() if "never became ready" in line]
    assert len(errors) == 1 and "ERROR" in errors[0] and "nothing was recorded" in errors[0], log[-4000:]
    assert "Traceback" not in log, log[-4000:]
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        assert [s.id for s in gb.students] == [] and gb.db.query(nbgrader_submission_model()).count() == 0
    assert not (root / "autograded").exists() and not (root / "grader_results").exists()


@pytest.mark.slow
@needs_sandbox
def test_a_worker_that_cannot_be_replaced_midway_stops_autograde_without_blaming_students(template, tmp_path):
    root, returncode, log = _autograde_two_honest_students_with(template, tmp_path, "DiesLaterPool")

    assert returncode != 0, log[-4000:]
    errors = [line for line in log.splitlines() if "ERROR" in line]
    assert len(errors) == 1 and "never became ready" in errors[0] and "a-honest" in errors[0], log[-4000:]
    assert "Traceback" not in log and "Removing failed" not in log, log[-4000:]
    assert "b-honest" not in course.gradebook_scores(f"sqlite:///{root / 'gradebook.db'}")
    assert not (root / "autograded" / "a-honest" / course.ASSIGNMENT).exists(), "a re-run grades a-honest again"


def nbgrader_submission_model():
    from nbgrader.api import SubmittedAssignment

    return SubmittedAssignment
