"""Run a notebook's code in a separate Python process and score its graded cells.

The parent reads the notebook, restores the instructor's test and locked cells
(from the solutions notebook, by grade_id, as nbgrader does), and starts a
child ``python -m grader.runner`` that executes the cells in order in an
IPython shell. The child reports each cell as one JSON line in a results file,
flushed before the next cell starts, so that a crash, ``os._exit`` or a timeout
keeps every result reported before it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import nbformat

DEFAULT_TIMEOUT = 300.0  # seconds for a whole notebook
OUTPUT_LIMIT = 1_000_000  # bytes of the child's stdout/stderr kept (the rest is dropped, not buffered)


@dataclass
class Cell:
    index: int
    source: str
    grade_id: str = ""
    points: float = 0.0
    graded: bool = False


@dataclass
class CellResult:
    grade_id: str
    points: float
    max_points: float
    status: str  # "passed", "failed", "not run"
    message: str = ""


@dataclass
class NotebookResult:
    notebook: str
    tests_from: str
    cells: list[CellResult] = field(default_factory=list)
    problem: str = ""  # why grading stopped early, if it did
    seconds: float = 0.0

    @property
    def score(self) -> float:
        return sum(c.points for c in self.cells)

    @property
    def max_score(self) -> float:
        return sum(c.max_points for c in self.cells)

    def by_exercise(self) -> dict[str, list[CellResult]]:
        groups: dict[str, list[CellResult]] = {}
        for cell in self.cells:
            groups.setdefault(exercise_of(cell.grade_id), []).append(cell)
        return groups

    def as_dict(self) -> dict[str, Any]:
        return {
            "notebook": self.notebook,
            "tests_from": self.tests_from,
            "score": self.score,
            "max_score": self.max_score,
            "problem": self.problem,
            "seconds": round(self.seconds, 2),
            "exercises": {
                name: {
                    "score": sum(c.points for c in cells),
                    "max_score": sum(c.max_points for c in cells),
                    "cells": [asdict(c) for c in cells],
                }
                for name, cells in self.by_exercise().items()
            },
        }


def exercise_of(grade_id: str) -> str:
    """'sinh-double-backward' -> 'sinh' (the exercise contract: test ids start with '<exercise>-')."""
    return grade_id.split("-", 1)[0]


def _nbgrader(cell: Any) -> dict[str, Any]:
    return dict(cell.get("metadata", {}).get("nbgrader", {}))


def cells_to_run(notebook: Any, instructor: Any | None) -> list[Cell]:
    """The code cells in order; graded and locked cells replaced by the instructor's version when given."""
    trusted: dict[str, Any] = {}
    if instructor is not None:
        trusted = {
            _nbgrader(c)["grade_id"]: c
            for c in instructor.cells
            if c.cell_type == "code" and _nbgrader(c).get("grade_id") and (_nbgrader(c).get("grade") or _nbgrader(c).get("locked"))
        }
    cells: list[Cell] = []
    seen: set[str] = set()
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        meta = _nbgrader(cell)
        grade_id = meta.get("grade_id", "")
        source = cell.source
        if grade_id in trusted:
            meta, source = _nbgrader(trusted[grade_id]), trusted[grade_id].source
            seen.add(grade_id)
        graded = bool(meta.get("grade"))
        cells.append(Cell(index, source, grade_id, float(meta.get("points", 0) or 0), graded))
    # A graded cell deleted from the submission still counts, with 0 points (it cannot have passed).
    for grade_id, cell in trusted.items():
        if grade_id not in seen and _nbgrader(cell).get("grade"):
            cells.append(Cell(-1, "raise AssertionError('this test cell was deleted from the notebook')", grade_id,
                              float(_nbgrader(cell).get("points", 0) or 0), True))
    return cells


def find_instructor_notebook(path: Path) -> Path | None:
    """solutions/<assignment>/<same name> in the repository the notebook (or this package) lives in."""
    candidates = [path.resolve().parent, Path.cwd(), Path(__file__).resolve().parent.parent]
    for start in candidates:
        for folder in [start, *start.parents]:
            matches = sorted((folder / "solutions").glob(f"*/{path.name}"))
            if matches:
                return matches[0]
    return None


def grade_notebook(path: Path, instructor_path: Path | None = None, timeout: float = DEFAULT_TIMEOUT) -> NotebookResult:
    """Execute ``path`` in a child process and score its graded cells."""
    started = time.monotonic()
    notebook = nbformat.read(str(path), as_version=4)
    instructor = nbformat.read(str(instructor_path), as_version=4) if instructor_path else None
    cells = cells_to_run(notebook, instructor)
    result = NotebookResult(str(path), str(instructor_path) if instructor_path else "the notebook's own test cells")
    reported, problem = _execute(cells, path.resolve().parent, timeout)
    for cell in cells:
        if not cell.graded:
            continue
        outcome = reported.get(cell.index)
        if outcome is None:
            result.cells.append(CellResult(cell.grade_id, 0.0, cell.points, "not run", problem or "not reached"))
        elif outcome["ok"]:
            result.cells.append(CellResult(cell.grade_id, cell.points, cell.points, "passed"))
        else:
            result.cells.append(CellResult(cell.grade_id, 0.0, cell.points, "failed", outcome["error"]))
    result.problem = problem
    result.seconds = time.monotonic() - started
    return result


def _execute(cells: list[Cell], workdir: Path, timeout: float) -> tuple[dict[int, dict[str, Any]], str]:
    with tempfile.TemporaryDirectory(prefix="grader-") as tmp:
        plan = Path(tmp) / "cells.json"
        results = Path(tmp) / "results.jsonl"
        plan.write_text(json.dumps([asdict(c) for c in cells]), encoding="utf-8")
        env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONWARNINGS": "ignore"}
        with open(Path(tmp) / "output.txt", "wb") as output:
            child = subprocess.Popen(
                [sys.executable, "-m", "grader.runner", str(plan), str(results)],
                cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: a timeout kills everything it started
            )
            problem = ""
            try:
                code = child.wait(timeout=timeout)
                if code != 0:
                    problem = f"the notebook's process ended early (exit code {code}) while running its code"
            except subprocess.TimeoutExpired:
                problem = f"the notebook did not finish within {timeout:.0f} s (an endless loop?); it was stopped"
            finally:
                try:
                    os.killpg(child.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                child.wait()
        reported: dict[int, dict[str, Any]] = {}
        running = None
        if results.exists():
            for line in results.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if entry.get("event") == "start":
                    running = entry["index"]
                else:
                    reported[entry["index"]] = entry
                    running = None
        if problem and running is not None:
            where = next((c for c in cells if c.index == running), None)
            label = f"cell {where.grade_id or where.index}" if where else "a cell"
            problem += f" in {label}"
        return reported, problem


# --- the child -------------------------------------------------------------------------------------


def _child(plan_path: str, results_path: str) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    cells = json.loads(Path(plan_path).read_text(encoding="utf-8"))
    shell = InteractiveShell.instance()
    with open(results_path, "w", encoding="utf-8") as out:

        def report(entry: dict[str, Any]) -> None:
            out.write(json.dumps(entry) + "\n")
            out.flush()
            os.fsync(out.fileno())

        for cell in cells:
            report({"event": "start", "index": cell["index"]})
            run = shell.run_cell(cell["source"], store_history=False, silent=False)
            error = run.error_before_exec or run.error_in_exec
            report({"event": "done", "index": cell["index"], "ok": error is None, "error": _describe(error)})


def _describe(error: BaseException | None) -> str:
    if error is None:
        return ""
    if isinstance(error, AssertionError) and str(error).strip():
        return str(error).strip()
    from .diagnosis import student_line

    where = student_line(error)
    return f"{type(error).__name__}: {error}" + (f"\n  in your code: {where}" if where else "")


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2])
