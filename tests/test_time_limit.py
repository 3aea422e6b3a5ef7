"""One time limit per notebook, whichever way it is graded: nbgrader's autograde (TrustedExecute, as
nbgrader_config.py leaves it), ``grader grade`` and the runner both call, all default to
``grader.boundary.limits.NOTEBOOK_SECONDS`` (they were 120 s and 300 s)."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

from grader.boundary.limits import NOTEBOOK_SECONDS
from grader.classroom import cli
from grader.isolation import sandbox
from grader.judge import runner

REPO = Path(__file__).resolve().parent.parent
NOTEBOOK = REPO / "solutions" / "autograd" / "02_custom_function.ipynb"

# nbgrader's way: its config file loaded as nbgrader loads it (traitlets' Python config loader), then the plugin
# built from it. In a separate process: the file configures logging and warnings of the process that loads it.
NBGRADER_TIMEOUT = """
import json, sys
from traitlets.config.loader import PyFileConfigLoader
from grader.classroom.nbgrader_plugins import TrustedExecute
config = PyFileConfigLoader("nbgrader_config.py", path=sys.argv[1]).load_config()
print(json.dumps(TrustedExecute(config=config).timeout))
"""


class _Graded(Exception):
    pass


def test_grader_grade_defaults_to_the_one_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: dict[str, float] = {}

    def grade_notebook(path: Path, tests: Path | None, timeout: float, **_: object) -> None:
        asked["timeout"] = timeout
        raise _Graded

    monkeypatch.setattr(cli, "grade_notebook", grade_notebook)
    assert NOTEBOOK.is_file(), NOTEBOOK
    with pytest.raises(_Graded):
        cli.main(["grade", str(NOTEBOOK), "--json"])
    assert asked == {"timeout": NOTEBOOK_SECONDS}


def test_nbgrader_autograde_defaults_to_the_one_time_limit() -> None:
    done = subprocess.run([sys.executable, "-c", NBGRADER_TIMEOUT, str(REPO)], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == NOTEBOOK_SECONDS


def test_the_runner_and_the_sandbox_default_to_the_one_time_limit() -> None:
    for function in (runner.grade_notebook, runner.grade_cells):
        assert inspect.signature(function).parameters["timeout"].default == NOTEBOOK_SECONDS, function.__name__
    assert sandbox.Limits().wall_seconds == NOTEBOOK_SECONDS


def test_the_instructors_guide_states_the_one_time_limit() -> None:
    guide = (REPO / "docs" / "instructors.md").read_text(encoding="utf-8")
    assert f"{NOTEBOOK_SECONDS:g} s" in guide and "NOTEBOOK_SECONDS" in guide
