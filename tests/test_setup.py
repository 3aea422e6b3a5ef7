"""Setups other than the demo's: the sandbox runs exactly the grader the trusted side imported, or grading stops.

Each test reproduces a setup that once recorded zeros silently (issue 7, point 7): a course holding its own
copy of the grader next to an editable install from another checkout; a course whose .venv is a symlink;
a worker that cannot start. Run as the grader really runs (as root here: the sandbox drops to its own user).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from grader.isolation import pool as pool_module
from grader.isolation import sandbox

AVAILABLE, WHY = sandbox.available()
pytestmark = [pytest.mark.skipif(not AVAILABLE, reason=f"sandbox unavailable: {WHY}"), pytest.mark.slow]
REPO = Path(__file__).resolve().parent.parent
NOTEBOOK = REPO / "solutions" / "autograd" / "02_custom_function.ipynb"

GRADE = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    import grader
    from grader.judge import runner
    nb = Path(sys.argv[1])
    result = runner.grade_notebook(nb, nb, timeout=60)
    print(json.dumps({"score": result.score, "max": result.max_score, "problem": result.problem,
                      "grader": str(Path(grader.__file__).resolve().parent)}))
""")


def _grade_with(python: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> dict:
    done = subprocess.run([python, "-c", GRADE, str(NOTEBOOK)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})}, cwd=cwd or REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_course_with_its_own_grader_copy_is_graded_by_that_copy():
    """The trusted side imports a grader package from another folder than the venv's editable install: the
    sandbox must run that same package (mounted at its own place), not fail to import or import another."""
    other = Path(tempfile.mkdtemp(prefix="other-checkout-"))
    try:
        shutil.copytree(REPO / "grader", other / "grader", ignore=shutil.ignore_patterns("__pycache__"))
        os.chmod(other, 0o755)
        got = _grade_with(sys.executable, env={"PYTHONPATH": str(other)}, cwd=other)
        assert got["grader"] == str((other / "grader").resolve()), "the test must import the copy"
        assert (got["score"], got["max"], got["problem"]) == (6.0, 6.0, ""), got
    finally:
        shutil.rmtree(other, ignore_errors=True)


def test_a_symlinked_venv_works_inside_the_sandbox():
    """`.venv` is a symlink to the real environment: the interpreter's path must exist inside the sandbox."""
    folder = Path(tempfile.mkdtemp(prefix="course-with-linked-venv-"))
    try:
        os.chmod(folder, 0o755)
        (folder / ".venv").symlink_to(Path(sys.prefix).resolve(), target_is_directory=True)
        python = folder / ".venv" / "bin" / Path(sys.executable).name
        got = _grade_with(str(python))
        assert (got["score"], got["max"], got["problem"]) == (6.0, 6.0, ""), got
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_worker_that_cannot_start_stops_grading_and_names_the_cause(monkeypatch):
    monkeypatch.setattr(pool_module, "BOOT", "import sys; sys.exit('grader import failed: no module named grader')")
    with pytest.raises(sandbox.SetupError) as failure:
        pool_module.Pool(hide=[], workers=1)
    assert "grader import failed" in str(failure.value) and "Nothing was graded" in str(failure.value)


def test_a_worker_running_another_grader_is_refused(monkeypatch):
    original = sandbox.package_fingerprint

    monkeypatch.setattr(sandbox, "package_fingerprint", lambda folder=None: "not-the-sandboxes" if folder is None
                        else original(folder))
    with pytest.raises(sandbox.SetupError) as failure:
        pool_module.Pool(hide=[], workers=1)
    assert "different grader package" in str(failure.value)
