"""Shared helpers: the repository's notebooks and the catalogue of buggy and alternative answers."""

from __future__ import annotations

import gc
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import nbformat
import numpy as np
import pytest
import torch

from require_every_test import REQUIRE_EVERY_TEST  # noqa: F401 (the hook: pytest_plugins below)

pytest_plugins = ["require_every_test"]

# The files whose tests take longest (seconds of `make test`, 28 Nov), run first: `make test` hands whole files to its
# two processes in this order (--dist loadfile --no-loadscope-reorder), so the last minute is short files filling
# both processes, not one of them finishing a long file alone. Only an order: a file missing here runs later.
LONGEST_FIRST = ("test_cluster.py", "test_adversarial.py", "test_shared.py", "test_grading_day.py",
                 "test_honest_corpus.py", "test_fixed_costs.py", "test_browser.py", "test_notebooks.py",
                 "test_sandbox_attacks.py", "test_checks.py", "test_course.py", "test_feedback_language.py",
                 "test_pool_start.py", "test_cli.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: number for number, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # (stable: the others keep pytest's order)

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions" / "autograd"
RELEASE = REPO / "notebooks" / "autograd"
EXAMPLES = REPO / "examples"

# exercise -> how a test cell gets the function under test from the answer cell's namespace
ENTRY_NAME = {"square": "Square.apply", "exp": "Exp.apply", "sinh": "sinh", "cube": "Cube.apply",
              "linear": "LinearFunction.apply", "softplus": "Softplus.apply", "sortvalues": "SortValues.apply"}


def best_cpu_seconds(run: Callable[[], Any], repeat: int = 3) -> float:
    """The fewest CPU seconds of this process ``run()`` took in ``repeat`` calls, with the garbage collector off.

    Speed bounds check that a call is fast, not what else happened meanwhile: under ``make test`` the other test
    process, a collection of an earlier test's garbage, or torch's threads spinning while the cores are busy can
    each add a tenth of a second to one call (CI, 25 Nov: 0.256 s for a check that takes 0.006 s). ``timeit``
    reports the best of its repeats for the same reason.
    """
    times = []
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat):
            start = time.process_time()
            run()
            times.append(time.process_time() - start)
    finally:
        if was_enabled:
            gc.enable()
    return min(times)


def _resolve(name: str, ns: dict):
    head, *attributes = name.split(".")
    value = ns[head]
    for attribute in attributes:
        value = getattr(value, attribute)
    return value


ENTRY = {exercise: (lambda ns, name=name: _resolve(name, ns)) for exercise, name in ENTRY_NAME.items()}


@dataclass(frozen=True)
class Cell:
    """One graded test cell of an exercise: which check it calls, on which of the answer's functions."""

    module: str  # "checks" (custom Functions, grader.checks) or "basics" (functions, grader.basics)
    check: str  # the public check's name in that module, e.g. "first_derivatives", "check_hvp"
    entry: str = ""  # for basics: the answer's function the test cell passes, e.g. "hvp_forward"


_FUNCTION_CELLS = {"forward": Cell("checks", "forward"), "first-order": Cell("checks", "first_derivatives"),
                   "second-order": Cell("checks", "second_derivatives"), "structure": Cell("checks", "structure")}

# exercise -> cell suffix ("first-order": test cell `<exercise>-first-order`) -> the check that cell runs
CELLS: dict[str, dict[str, Cell]] = {
    **{exercise: dict(_FUNCTION_CELLS) for exercise in ("square", "exp", "sinh", "cube", "linear")},
    "softplus": {**_FUNCTION_CELLS, "forward-mode": Cell("checks", "forward_mode"), "vmap": Cell("checks", "vmap")},
    "sortvalues": {suffix: _FUNCTION_CELLS[suffix] for suffix in ("forward", "first-order", "structure")},
    "hvp": {"double-backward": Cell("basics", "check_hvp", "hvp"),
            "forward-over-reverse": Cell("basics", "check_hvp_forward_over_reverse", "hvp_forward")},
    "penalty": {"value": Cell("basics", "check_penalty_value", "gradient_penalty"),
                "gradient": Cell("basics", "check_penalty_gradient", "gradient_penalty")},
}
# The old name: the four checks of a notebook-2/3 custom-Function exercise.
CHECK_OF_CELL = {suffix: cell.check for suffix, cell in _FUNCTION_CELLS.items()}

def cell_calls(exercise: str, suffix: str) -> list[dict]:
    """The keyword arguments of each check call of the test cell `<exercise>-<suffix>` in the solutions notebooks,
    visible call first then hidden ones (as nbgrader runs them): an expectation must hold on all of them."""
    from grader.judge import testcells

    grade_id = f"{exercise}-{suffix}"
    calls = testcells.parse(solution_cells()[grade_id].source, grade_id)
    return [{k: v for k, v in call.kwargs.items() if k != "exercise"} for call in calls]


def nbgrader_meta(cell) -> dict:
    return dict(cell.get("metadata", {}).get("nbgrader", {}))


def cells_by_id(path: Path) -> dict[str, nbformat.NotebookNode]:
    return {nbgrader_meta(c)["grade_id"]: c for c in nbformat.read(str(path), as_version=4).cells
            if nbgrader_meta(c).get("grade_id")}


def solution_cells() -> dict[str, nbformat.NotebookNode]:
    cells = {}
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        cells.update(cells_by_id(path))
    return cells


def namespace_for(exercise: str) -> dict:
    """What an answer cell of ``exercise`` sees: torch, numpy, for cube the locked NumPy helpers, and for notebook 4's
    functions (hvp, penalty) the notebook's Functions their probes are built from: the Square, Exp, Sinh and Cube
    carried over from notebook 3 (cell own-functions) and Softplus, the instructor's as in solutions/."""
    ns: dict = {"torch": torch, "np": np, "numpy": np}
    cells = solution_cells()
    if exercise == "cube":
        exec(cells["cube-helpers"].source, ns)
    if exercise in ("hvp", "penalty"):
        for grade_id in ("own-functions-helpers", "own-functions", "softplus"):
            exec(cells[grade_id].source, ns)
    return ns


@dataclass(frozen=True)
class CatalogueEntry:
    path: Path
    exercise: str
    description: str
    expect: dict[str, str]  # cell suffix ("first-order") -> "pass" or the mistake id it must produce
    caught_by: str = ""  # which of PyTorch's own checks notice it: gradcheck, gradgradcheck (only) or neither

    @property
    def id(self) -> str:
        return self.path.stem

    def source(self) -> str:
        return self.path.read_text(encoding="utf-8")

    def load(self) -> dict:
        ns = namespace_for(self.exercise)
        exec(compile(self.source(), str(self.path), "exec"), ns)
        return ns


def read_entry(path: Path) -> CatalogueEntry:
    text = path.read_text(encoding="utf-8")
    exercise = re.search(r"^# exercise: (\S+)", text, re.M)
    expect = re.search(r"^# expect: (.*)$", text, re.M)
    described = re.search(r"^# (?:mistake|style): (.*)$", text, re.M)
    assert exercise and described, f"{path}: needs '# exercise:' and '# mistake:' (or '# style:') header lines"
    cells = CELLS[exercise.group(1)]
    pairs = dict(kv.split("=", 1) for kv in expect.group(1).split()) if expect else {k: "pass" for k in cells}
    caught = re.search(r"^# caught-by: (\S+)", text, re.M)
    return CatalogueEntry(path, exercise.group(1), described.group(1), pairs, caught.group(1) if caught else "")


MISTAKES = [read_entry(p) for p in sorted((EXAMPLES / "mistakes").glob("*.py"))]
ALTERNATIVES = [read_entry(p) for p in sorted((EXAMPLES / "alternatives").glob("*.py"))]


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO



# --- expensive results built once per `make test`, shared by the files (and xdist processes) that read them ----------


def built_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder ``<session temp>/shared/<name>``, made by ``build(folder)`` once for the whole test session.

    Under pytest-xdist each process has its own temporary folder; the folder above them is the session's, so the
    first process that asks builds the folder (under a file lock) and the others wait for it, then reuse it. A build
    that failed is not retried (its exception is raised again in every test that asks). Readers must not change the
    folder: copy it (``shutil.copytree(..., symlinks=True)``) to write into it.
    """
    import fcntl
    import json
    import traceback

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # (pytest-of-<user>/pytest-N/ above each process's popen-gwN/)
    shared = base / "shared"
    shared.mkdir(exist_ok=True)
    folder, done = shared / name, shared / f"{name}.done"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed, also if this process dies
        if not done.exists():
            try:
                folder.mkdir()
                build(folder)
                done.write_text(json.dumps({"error": ""}))
            except BaseException:
                done.write_text(json.dumps({"error": traceback.format_exc()}))
                raise
    error = json.loads(done.read_text())["error"]
    assert not error, f"building the shared {name} failed (in another test's setup):\n{error}"
    return folder


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory) -> tuple[Path, int, str]:
    """`make demo` after the install: `python -m grader.classroom.course demo` in ``<folder>/course``, run once for every file
    that reads it (test_course, test_readme, test_cluster, test_gradebook_postgres): (folder, exit code, output as a
    CI log would hold it). The course folder is the demo class graded by one nbgrader process at a time on a SQLite
    gradebook: its English students' autograd and its Chinese-speaking students' autograd-zh (students.toml's
    language = "zh"), one gradebook; copy it to change it."""
    import json
    import subprocess
    import sys

    def build(folder: Path) -> None:
        done = subprocess.run([sys.executable, "-m", "grader.classroom.course", "demo", "--dir", str(folder / "course")],
                              cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=900)
        (folder / "run.json").write_text(json.dumps({"returncode": done.returncode, "stdout": done.stdout}))

    folder = built_once(tmp_path_factory, "demo", build)
    run = json.loads((folder / "run.json").read_text())
    return folder, run["returncode"], run["stdout"]


@pytest.fixture(scope="session")
def released_template(tmp_path_factory) -> Path:
    """test_adversarial's template course (solutions/ linked, `nbgrader generate_assignment` run: release/ and
    gradebook.db), made once for the whole `make test` instead of once per file or test that needs one
    (test_adversarial, test_cluster, test_fixed_costs, test_exporter: 8 s of nbgrader each). Every reader copies it
    (``shutil.copytree(..., symlinks=True)``) before grading or writing into it, as it did with its own template."""
    from test_adversarial import _template

    return built_once(tmp_path_factory, "template", _template) / "template"


# --- folders removed while the next tests run -------------------------------------------------------------------

_REMOVALS: list = []  # the `rm -rf` processes started by remove_later, waited for at the end of the session


def remove_later(folder: Path) -> None:
    """Remove ``folder`` (and everything in it) in a process of its own, while this test process goes on to its next
    tests; the session ends only once it is gone (pytest_sessionfinish below). For a folder of many files that no
    later test reads (test_shared's students' environment: some 80,000 files, 10 to 25 s of unlinking)."""
    import subprocess

    _REMOVALS.append(subprocess.Popen(["rm", "-rf", "--one-file-system", str(folder)], stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))


def pytest_sessionfinish(session, exitstatus) -> None:
    import shutil

    while _REMOVALS:
        process = _REMOVALS.pop()
        process.wait()
        shutil.rmtree(process.args[-1], ignore_errors=True)  # (what rm could not remove, if anything)
