"""Grade a notebook the trusted way: student code in a sandbox, verdicts in this process.

1. The plan: the notebook's code cells in order, with the instructor's test cells (restored by
   grade_id, hidden parts included) replaced by the check calls parsed from them (``grader.judge.testcells``).
   Test cells deleted or renamed in the submission are still checked, at the end.
2. ``grader.sandboxed.child`` runs the plan under bubblewrap (``grader.isolation.sandbox``): it executes the student's cells
   and, where a test cell stood, records observations of the function under test. Each result is
   flushed at once, so a crash, ``os._exit``, a kill by a limit or a timeout keeps what came before.
3. Here, outside the sandbox, each check call's observations are judged against PyTorch's references
   (``grader.judge.custom_functions.judge`` / ``grader.judge.functions.judge``). A test cell passes when all its calls pass.
"""

from __future__ import annotations

import io
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nbformat

from grader.judge import outputs, testcells
from grader.isolation import sandbox
from grader.boundary import channel, reports, wire
from grader.boundary.channel import RESULTS_LIMIT  # bytes of results read from the sandbox
from grader.boundary.limits import NOTEBOOK_SECONDS
from grader.judge.testcells import exercise_of  # noqa: F401 (part of this module's interface)
from grader.judge.diagnosis import CheckFailed, check_label, passed_line  # noqa: F401 (check_label: interface)
from grader.spec import messages, registry
from grader.spec.exercises import check_draw
from grader.spec.messages import say

if TYPE_CHECKING:
    from grader.isolation.pool import Pool

JUDGE_SECONDS = float(os.environ.get("GRADER_JUDGE_SECONDS", "20"))  # trusted judging time per notebook


@dataclass
class Cell:
    index: int  # position in the submission (-1: a test cell missing from it)
    source: str
    grade_id: str = ""
    points: float = 0.0
    graded: bool = False
    calls: list[testcells.CheckCall] = field(default_factory=list)
    restricted: bool = True  # compiled under grader.sandboxed.policy: anything not byte-identical to an instructor's cell
    playground: bool = False  # a student's cell the score does not depend on (grader.spec.playground): not run
    demo: bool = False  # the instructor's cell tagged DEMO_TAG, as released: a demonstration, not run either
    saved: list[dict[str, Any]] = field(default_factory=list)  # a cell not run: its outputs, as the student saved them

    @property
    def not_run(self) -> bool:
        """Left out of the scoring run (its saved outputs are shown instead, marked)."""
        return self.playground or self.demo


@dataclass
class CellResult:
    grade_id: str
    points: float
    max_points: float
    status: str  # "passed", "failed", "not run", "not graded" (a grader error: ``not_graded``)
    message: str = ""
    findings: list[dict[str, Any]] = field(default_factory=list)  # one per failed check call: mistake id, where...


@dataclass
class NotebookResult:
    notebook: str
    tests_from: str
    cells: list[CellResult] = field(default_factory=list)
    problem: str = ""  # why grading stopped early, if it did (in the notebook's language: the student reads it)
    problem_for_instructor: str = ""  # the same in English, for the instructor's terminal and log
    restored: list[str] = field(default_factory=list)  # what the notebook had patched (put back before observing)
    seconds: float = 0.0
    flags: list[dict[str, str]] = field(default_factory=list)  # {"cell", "what"}: attempts no honest answer makes
    outputs: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)  # (source key, what the cell showed)

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
            "restored": self.restored,
            "flags": self.flags,
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


def _nbgrader(cell: Any) -> dict[str, Any]:
    return dict(cell.get("metadata", {}).get("nbgrader", {}))


def instructor_cells(instructor: Any) -> dict[str, Any]:
    """grade_id -> the instructor's cell, for test cells and locked cells (what a student may not change)."""
    return {
        _nbgrader(c)["grade_id"]: c
        for c in instructor.cells
        if c.cell_type == "code" and _nbgrader(c).get("grade_id") and (_nbgrader(c).get("grade") or _nbgrader(c).get("locked"))
    }


DEMO_TAG = "demo"  # a cell tag of the instructor's notebook: a demonstration the score does not depend on


class InstructorSources(frozenset):
    """The instructor's code cells' sources; ``demos``: those of cells tagged ``DEMO_TAG`` (read from the
    instructor's notebooks only: a tag a student adds to their copy changes nothing)."""

    demos: frozenset[str] = frozenset()


def instructor_sources(*notebooks: Any) -> InstructorSources:
    """The code cells' sources of the instructor's notebooks (source and release): a submitted cell byte-identical
    to one of them is the instructor's code and runs as it is; every other cell runs under ``grader.sandboxed.policy``.
    Cells the instructor tagged ``DEMO_TAG`` (an expensive demonstration nothing after it reads, such as notebook 4's
    training run) are not run when grading: their saved outputs are shown, marked (``cells_to_run``)."""
    cells = [c for nb in notebooks if nb is not None for c in nb.cells if c.cell_type == "code"]
    sources = InstructorSources(c.source for c in cells)
    sources.demos = frozenset(c.source for c in cells if DEMO_TAG in (c.get("metadata", {}).get("tags") or []))
    return sources


def cells_to_run(notebook: Any, trusted: dict[str, Any], instructors: frozenset[str] = frozenset(),
                 policy: bool = True) -> list[Cell]:
    """The code cells in order, test and locked cells as the instructor wrote them; missing test cells last.
    ``instructors``: the sources of the instructor's cells (``instructor_sources``); the test and locked cells of
    ``trusted`` count as the instructor's too. ``policy=False`` runs every cell as it is (tests of the layers
    beneath the policy only)."""
    demos = getattr(instructors, "demos", frozenset())
    instructors = instructors | {c.source for c in trusted.values()}
    cells: list[Cell] = []
    answers: list[bool] = []  # cells[k] is an answer cell (nbgrader's solution cell)
    saved: list[Any] = []  # cells[k]'s outputs in the submission
    seen: set[str] = set()
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        meta = _nbgrader(cell)
        grade_id = meta.get("grade_id", "")
        source = cell.source
        if grade_id in trusted and grade_id not in seen:
            meta, source = _nbgrader(trusted[grade_id]), trusted[grade_id].source
            seen.add(grade_id)
        elif meta.get("grade"):
            meta = {}  # a test cell the instructor does not know (renamed or copied): just code
        cells.append(_cell(index, source, grade_id, meta, policy and source not in instructors))
        answers.append(bool(meta.get("solution")))
        saved.append(cell.get("outputs", []))
    for grade_id, cell in trusted.items():  # deleted or renamed test cells are still checked
        if grade_id not in seen and _nbgrader(cell).get("grade"):
            cells.append(_cell(-1, cell.source, grade_id, _nbgrader(cell), False))
            answers.append(False)
            saved.append([])
    if policy:
        _mark_playground(cells, answers, saved)
    for k, cell in enumerate(cells):
        if cell.source in demos and not cell.graded and not answers[k] and cell.index >= 0:
            cell.demo = True  # byte-identical to the instructor's tagged cell (a test or answer cell never is one)
        if not cell.graded:  # shown if the cell is not run (a demo, a playground, a notebook that scores nothing)
            cell.saved = saved[k] if isinstance(saved[k], list) else []
    return cells


def _mark_playground(cells: list[Cell], answers: list[bool], saved: list[Any]) -> None:
    """The student's cells the score does not depend on (``grader.spec.playground``: they bind nothing an answer,
    a test cell or an instructor's cell reads): not run in the scoring run, their saved outputs kept, marked."""
    from grader.spec import playground

    student = [c.restricted and not c.graded and not answers[k] and c.index >= 0 for k, c in enumerate(cells)]
    roots = [k for k in range(len(cells)) if not student[k]]
    checks_at = max((k for k, c in enumerate(cells) if c.graded), default=len(cells))
    for k in playground.playground([c.source for c in cells], student, roots, checks_at):
        cells[k].playground = True
        cells[k].saved = saved[k] if isinstance(saved[k], list) else []


def _cell(index: int, source: str, grade_id: str, meta: dict[str, Any], restricted: bool = True) -> Cell:
    graded = bool(meta.get("grade")) and not meta.get("solution")
    calls = testcells.parse(source, grade_id) if graded else []
    return Cell(index, source, grade_id, float(meta.get("points", 0) or 0), graded, calls, restricted)


def find_instructor_notebook(path: Path) -> Path | None:
    """solutions/<assignment>/<same name> in the repository the notebook (or this package) lives in."""
    candidates = [path.resolve().parent, Path.cwd(), Path(__file__).resolve().parents[2]]
    for start in candidates:
        for folder in [start, *start.parents]:
            matches = sorted((folder / "solutions").glob(f"*/{path.name}"))
            if matches:
                return matches[0]
    return None


class SandboxRefused(RuntimeError):
    """Untrusted code would run without a sandbox and the instructor did not allow it."""


def grade_notebook(path: Path, instructor_path: Path | None = None, timeout: float = NOTEBOOK_SECONDS,
                   allow_unsandboxed: bool = False, hide: list[Path] | None = None, policy: bool = True) -> NotebookResult:
    """Grade ``path``: its code runs in the sandbox, its checks are judged here. ``policy=False``: no cell runs under
    the course's policy (only to test the layers beneath it)."""
    notebook = nbformat.read(str(path), as_version=4)
    instructor = nbformat.read(str(instructor_path), as_version=4) if instructor_path else notebook
    tests_from = str(instructor_path) if instructor_path else "the notebook's own test cells"
    own = instructor_sources(instructor) if instructor_path else frozenset()
    return grade_cells(str(path), cells_to_run(notebook, instructor_cells(instructor), own, policy), tests_from, timeout,
                       allow_unsandboxed, hide or _course_roots(path, instructor_path),
                       language=messages.language_of(notebook))


def _course_roots(*paths: Path | None) -> list[Path]:
    """What the sandbox hides: the folders holding the notebook and the instructor's solutions."""
    roots = []
    for p in paths:
        if p is not None:
            folder = p.resolve().parent
            roots.append(folder.parent if folder.parent != folder.parent.parent else folder)
    return sorted(set(roots))


def grade_cells(name: str, cells: list[Cell], tests_from: str, timeout: float = NOTEBOOK_SECONDS,
                allow_unsandboxed: bool = False, hide: list[Path] = (),  # type: ignore[assignment]
                pool: "Pool | None" = None, judge_seconds: float | None = None, language: str = "en") -> NotebookResult:
    """Grade prepared cells: in ``pool`` if given (fast), else in a sandbox of their own.

    Judging (here, in the trusted process) has ``judge_seconds`` per notebook (default ``JUDGE_SECONDS``,
    env ``GRADER_JUDGE_SECONDS``): checks not judged within it fail, never pass. ``language``: the notebook's
    (``messages.language_of``); its diagnoses, and what its own cells print in the sandbox, are written in it."""
    with messages.using(language):  # (this thread's: the trusted side grades notebooks in threads)
        return _grade_cells(name, cells, tests_from, timeout, allow_unsandboxed, hide, pool, judge_seconds)


def _grade_cells(name: str, cells: list[Cell], tests_from: str, timeout: float, allow_unsandboxed: bool,
                 hide: list[Path], pool: "Pool | None", judge_seconds: float | None) -> NotebookResult:
    started = time.monotonic()
    result = NotebookResult(name, tests_from)
    if not any(c.graded for c in cells):
        # Nothing is scored (an ungraded notebook: the labs), so nothing runs: every cell shows the outputs the student
        # saved, marked as a playground's. Running them would cost a worker and could only add a refusal to the
        # feedback of code that earns nothing (issue 29: playgrounds are never refused). Whether a notebook scores
        # anything is the instructor's to say (the test cells come from the gradebook), never the student's.
        for cell in cells:
            cell.playground = cell.playground or not cell.demo
        _verdicts(result, cells, ({}, "", [], []), 0.0)
        result.seconds = time.monotonic() - started
        return result
    from grader.isolation.pool import GRADING

    token = GRADING.set(name)  # (a pool that has something to say about this run names the notebook)
    from grader.spec.exercises import draw_seed

    draw = draw_seed()  # this run's drawn probe (Exercise.probes): each check call gets its own seed from it (check_draw)
    try:
        executed = _execute([c for c in cells if not c.not_run], timeout, allow_unsandboxed, list(hide), pool, draw)
    finally:
        GRADING.reset(token)
    budget = JUDGE_SECONDS if judge_seconds is None else float(judge_seconds)
    try:
        _verdicts(result, cells, executed, budget, draw)
    except Exception as exc:  # noqa: BLE001  (a bug of ours, or reports no schema foresaw: this notebook's alone)
        why = exc.reason if isinstance(exc, GraderError) else f"judging failed ({error_text(exc)})"
        not_graded(result, [(c.grade_id, c.points) for c in cells if c.graded], why)
    result.seconds = time.monotonic() - started
    return result


class GraderError(Exception):
    """The grader, not the student, failed on this notebook: it is not graded (``not_graded``), never scored as a
    verdict, and the rest of the class is graded as usual. ``reason``: what failed, in English (for the instructor)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _verdicts(result: NotebookResult, cells: list[Cell], executed: tuple[Any, Any, list[str], list[tuple[Any, str]]],
              budget: float, draw: int | None = None) -> None:
    """Fill ``result`` from what the sandbox reported; raises ``GraderError`` (or whatever a bug of ours raises)
    when the reports could not be read or a check could not be judged."""
    reported, problems, restored, flags = executed
    problem, result.problem_for_instructor = problems if isinstance(problems, tuple) else (problems, "")
    names = {(c.index if c.index >= 0 else ("missing", c.grade_id)): c.grade_id or f"cell {c.index + 1}" for c in cells}
    result.flags = [{"cell": str(names.get(key, "?")), "what": what} for key, what in flags]
    if GRADER_ERROR in reported:
        raise GraderError(str(reported[GRADER_ERROR]))
    room = [outputs.NOTEBOOK_BYTES]
    result.outputs = [(outputs.source_key(c.source), _saved_outputs(c, room) if c.not_run else
                       outputs.sanitize(reported.get(("outputs", c.index)), room))
                      for c in cells if not c.graded and c.index >= 0]
    with _JUDGES:  # the budget starts once this notebook has a core of its own to be judged on
        _judge_cells(result, cells, reported, problem, budget, draw)
    result.problem = problem
    result.restored = restored


def _saved_outputs(cell: Cell, room: list[int]) -> list[dict[str, Any]]:
    """A playground or demo cell's outputs in the feedback: a one-line note that it was not run in grading, then
    what the student's own run showed (as saved, rebuilt as the sandbox's outputs are: text, images, errors)."""
    note = {"output_type": "stream", "name": "stdout",
            "text": "○ " + say("demo_cell" if cell.demo else "playground_cell") + "\n"}
    return [note, *outputs.sanitize(cell.saved, room)]


def not_graded(result: NotebookResult, graded: list[tuple[str, float]], reason: str) -> NotebookResult:
    """``result`` set aside as "not graded: grader error": each test cell (grade_id, points) scores 0 with one
    sentence saying so and what happens next, in the notebook's language (``reason`` stays English: the detail the
    instructor needs); the instructor's log reads it in English (``problem_for_instructor``)."""
    from grader.spec.messages import message

    title = say("not_graded_grader_error", reason=reason)
    text = f"{title}\n{message('not_graded_grader_error').hint}"
    result.cells = [CellResult(grade_id, 0.0, points, "not graded", text,
                               [{"mistake": "not_graded_grader_error", "title": title, "hidden": False}])
                    for grade_id, points in graded]
    result.problem = title
    with messages.using("en"):
        result.problem_for_instructor = say("not_graded_grader_error", reason=reason)
    return result


# Notebooks judged at once: one per core. A Dask cluster may hand back hundreds of results together; judged all at
# once on a few cores, each would run out its judging budget and fail checks it passes.
_JUDGES = threading.BoundedSemaphore(os.cpu_count() or 1)


def _judge_cells(result: NotebookResult, cells: list[Cell], reported: dict[Any, dict[str, Any]], problem: str,
                 budget: float, draw: int | None = None) -> None:
    deadline = time.monotonic() + budget
    for cell in cells:
        if not cell.graded:
            continue
        entry = reported.get(cell.index if cell.index >= 0 else ("missing", cell.grade_id))
        if entry is not None and entry.get("flagged"):
            reason = say("flagged_check", what=entry["flagged"])
            result.cells.append(CellResult(cell.grade_id, 0.0, cell.points, "failed", reason,
                                           [{"mistake": "flagged", "title": reason, "hidden": False}]))
            continue
        if entry is None:
            reason = problem or say("not_reached")
            result.cells.append(CellResult(cell.grade_id, 0.0, cell.points, "not run", reason,
                                           [{"mistake": "not_run", "title": reason, "hidden": False}]))
            continue
        if time.monotonic() > deadline:
            reason = say("judge_budget", seconds=budget)
            result.cells.append(CellResult(cell.grade_id, 0.0, cell.points, "failed", reason,
                                           [{"mistake": "judge_budget", "title": reason, "hidden": False}]))
            continue
        ok, message, findings = _judge_cell(cell, entry, _failed_before(cell, cells, reported), draw)
        result.cells.append(CellResult(cell.grade_id, cell.points if ok else 0.0, cell.points,
                                       "passed" if ok else "failed", message, findings))


def _failed_before(test: Cell, cells: list[Cell], reported: dict[Any, dict[str, Any]]) -> list[tuple[Cell, dict[str, Any]]]:
    """The code cells before ``test`` that raised, in order, with the error the sandbox reported for each."""
    failed = []
    for cell in cells:
        if cell is test:
            break
        error = reported.get(("raised", cell.index))
        if not cell.graded and cell.index >= 0 and error:
            failed.append((cell, error))
    return failed


def _defines(source: str, name: str) -> bool:
    import re

    pattern = rf"^[ \t]*(?:(?:async[ \t]+)?def|class)[ \t]+{re.escape(name)}\b|^[ \t]*{re.escape(name)}[ \t]*(?::[^=\n]*)?="
    return re.search(pattern, source[:200_000], re.M) is not None


def _not_found(call: testcells.CheckCall, error: Any, failed: list[tuple[Cell, dict[str, Any]]]) -> tuple[str, str]:
    """(mistake, sentence) for a function under test the sandbox could not find. When a code cell before the test
    cell raised, its error (and line) is the real cause: say that, not 'did you rename or delete it?'."""
    name = call.entry.split(".", 1)[0]
    if failed and str(error).startswith("NameError") and f"'{name}'" in str(error):
        definer = [(c, e) for c, e in failed if _defines(c.source, name)]
        cell, raised = (definer or failed)[-1]
        line, code = raised.get("line"), raised.get("code")
        at = ""
        if isinstance(line, int) and not isinstance(line, bool):
            at = " " + say("at_line", line=line) + (f": `{_clip(code, 200)}`" if isinstance(code, str) and code.strip()
                                                    else "")
        key = "not_found_cell_raised" if definer else "not_found_earlier_cell_raised"
        return "cell_raised", say(key, entry=call.entry, name=name, error=_clip(raised.get("error"), 300), at=at)
    return "not_found", say("not_found", entry=call.entry, error=error)


def _clip(text: Any, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _judge_cell(cell: Cell, entry: dict[str, Any], failed: list[tuple[Cell, dict[str, Any]]] = (),  # type: ignore[assignment]
                draw: int | None = None) -> tuple[bool, str, list[dict[str, Any]]]:
    """A test cell passes when all its check calls pass; its message has one verdict per call."""
    calls = entry.get("calls")
    if not isinstance(calls, list) or len(calls) != len(cell.calls):
        reason = say("not_reported")
        return False, reason, [{"mistake": "not_reported", "title": reason, "hidden": False}]
    lines: list[str] = []
    findings: list[dict[str, Any]] = []
    passed, seen = True, set()
    for n, (call, answer) in enumerate(zip(cell.calls, calls)):
        label = say("hidden_check_label") + " " if call.hidden else ""
        ok, text, finding = _judge_call(call, answer, failed, None if draw is None else check_draw(draw, cell.grade_id, n))
        passed = passed and ok
        if finding is not None:
            findings.append({**finding, "hidden": call.hidden})
        headline = text.split("\n", 1)[0]
        lines.append(label + (say("same_as_above", headline=headline) if not ok and headline in seen else text))
        seen.add(headline)
    return passed, "\n".join(lines), findings


def _judge_call(call: testcells.CheckCall, answer: Any,
                cells_failed: list[tuple[Cell, dict[str, Any]]] = (),  # type: ignore[assignment]
                draw: int | None = None) -> tuple[bool, str, dict[str, Any] | None]:
    """One check call: (passed, its ✓ line or its diagnosis, the finding if it failed).
    Never passes on malformed observations."""
    from grader.judge import custom_functions, functions
    from grader.spec.exercises import get

    def failed(mistake: str, text: str) -> tuple[bool, str, dict[str, Any]]:
        return False, text, {"mistake": mistake, "title": text.split("\n", 1)[0], "check": call.check}

    if not isinstance(answer, dict) or "observations" not in answer:
        error = answer.get("error") if isinstance(answer, dict) else "no answer"
        return failed(*_not_found(call, error, cells_failed))
    try:
        observations = wire.decode(answer["observations"])
        if registry.takes_exercise(call.module):
            kwargs = dict(call.kwargs)
            ex = get(kwargs.pop("exercise"))
            probes = ex.probes([tuple(s) for s in kwargs.get("shapes") or ex.default_shapes], int(kwargs.get("seed", 0)),
                               draw=draw)
            summary = custom_functions.judge(call.check, ex.id, probes, observations)
            return True, passed_line(ex.id, call.check, summary, len(probes)), None
        return True, "✓ " + functions.judge(call.check, observations, **call.kwargs), None
    except CheckFailed as failure:
        return False, str(failure).strip(), failure.finding.as_dict()
    except AssertionError as failure:
        return failed(getattr(failure, "mistake", "") or "basics:" + call.check, str(failure).strip())
    except (wire.WireError, KeyError, TypeError, ValueError) as exc:
        return failed("unreadable_observations", say("unreadable_observations", entry=call.entry, error=exc))
    except Exception as exc:  # a bug of ours: this notebook is not graded (never a verdict), the class goes on
        raise GraderError(f"judging `{call.entry}` ({call.check}) failed ({error_text(exc)})") from None


def _execute(cells: list[Cell], timeout: float, allow_unsandboxed: bool, hide: list[Path],
             pool: "Pool | None" = None, draw: int | None = None
             ) -> tuple[dict[Any, dict[str, Any]], Any, list[str], list[tuple[Any, str]]]:
    ok, why = (True, "") if pool is not None else sandbox.available()
    if not ok and not allow_unsandboxed:
        raise SandboxRefused(f"refusing to run student code without a sandbox: {why}. "
                             "Fix that, or pass --allow-unsandboxed (only for code you trust).")
    plan = []
    beyond = max((c.index for c in cells), default=0) + 1  # keys for missing test cells: after every real cell
    for cell in cells:
        key = cell.index if cell.index >= 0 else beyond + len(plan)
        if cell.graded:
            calls = [{**c.as_dict(), "draw": check_draw(draw, cell.grade_id, n)}
                     if draw is not None and registry.takes_exercise(c.module) else c.as_dict()
                     for n, c in enumerate(cell.calls)]
            plan.append({"kind": "test", "index": key, "grade_id": cell.grade_id, "calls": calls})
        else:
            plan.append({"kind": "code", "index": key, "source": cell.source, "restricted": cell.restricted})
    keys = {item["index"]: (cell.index if cell.index >= 0 else ("missing", cell.grade_id)) for item, cell in zip(plan, cells)}
    # first, the language the notebook's own cells print their self-checks in (the child sets it before any cell)
    plan.insert(0, {"kind": "language", "index": None, "language": messages.current()})
    if pool is None and ok:
        from grader.isolation.pool import Pool

        with Pool(hide=hide, workers=1) as own:  # one notebook: a pool of one, same isolation as a class
            return _execute_in(own, plan, keys, cells, timeout)
    if pool is not None:
        return _execute_in(pool, plan, keys, cells, timeout)
    scratch = Path(tempfile.mkdtemp(prefix="grader-"))
    try:  # no sandbox, explicitly allowed by the instructor: trusted code only
        held, checks = channel.split_plan(plan)  # the checks go as the sandboxed worker sends them: one at a time
        (scratch / "plan.json").write_text(json.dumps(held), encoding="utf-8")
        env = {"MPLBACKEND": "Agg", "PYTHONWARNINGS": "ignore", "GRADER_NO_DRAW": "1", "PYTHONNOUSERSITE": "1"}
        data, outcome = _run_unsandboxed(scratch, env, timeout, channel.plan_order(held), checks)
        return _read_results(data, keys, cells, outcome)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _execute_in(pool: "Pool", plan: list[dict[str, Any]], keys: dict[int, Any], cells: list[Cell],
                timeout: float) -> tuple[dict[Any, dict[str, Any]], Any, list[str], list[tuple[Any, str]]]:
    data, ended = pool.run_plan(plan, timeout)
    outcome = sandbox.Outcome(ended.returncode, "", 0.0, ended.stopped, sandbox.Limits(wall_seconds=timeout))
    return _read_results(data, keys, cells, outcome)


def _run_unsandboxed(scratch: Path, env: dict[str, str], timeout: float, order: list[Any],
                     checks: dict[Any, list[Any]]) -> tuple[bytes, sandbox.Outcome]:
    """Run the plan in a plain child process, reading its reports and handing it its checks as the sandboxed worker
    would."""
    started = time.monotonic()
    inbox = channel.Inbox()
    inbox.serve(order, checks)
    argv = [sys.executable, "-m", "grader.sandboxed.child", str(scratch / "plan.json"), inbox.address.replace("\0", "@", 1)]
    child = subprocess.Popen(argv, cwd=scratch, env={**os.environ, **env}, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    stopped = ""
    deadline = started + timeout
    try:
        while child.poll() is None:
            select.select([inbox.listener], [], [], 0.01)
            inbox.collect(child.pid, deadline)
            if inbox.full or time.monotonic() > deadline:
                stopped = "output" if inbox.full else "timeout"
                break
    finally:
        sandbox._kill(child)
        child.wait()
        inbox.collect(child.pid, time.monotonic() + 1)
        inbox.close()
    outcome = sandbox.Outcome(child.returncode, "", time.monotonic() - started, stopped, sandbox.Limits(wall_seconds=timeout))
    return "\n".join(inbox.lines).encode(), outcome

GRADER_ERROR = ("grader error",)  # key of ``reported``: why the notebook's reports could not be read


def _read_lines(data: bytes, keys: dict[int, Any], reported: dict[Any, Any], state: dict[str, Any]) -> None:
    """Read the reports into ``reported`` and ``state`` (running, restored, flags); raises ``reports.ReportError``
    (or whatever a malformed line makes fail) at the first line that is not a well-formed report."""
    flags: list[tuple[Any, str]] = state["flags"]
    text = data[:RESULTS_LIMIT].decode("utf-8", errors="replace")
    lines_left = LINES_PER_CELL * len(keys) + EXTRA_LINES  # beyond that, lines are spam: not read
    for number, line in enumerate(io.StringIO(text), 1):
        if not line.strip():
            continue
        lines_left -= 1
        if lines_left < 0:
            break
        try:
            entry = reports.check(json.loads(line))
            if entry["event"] != "flag" and entry["index"] not in keys:
                raise reports.ReportError(f"'{entry['event']}' report for plan item {entry['index']}, which the "
                                          "plan does not have")
        except reports.ReportError as exc:
            raise reports.ReportError(f"report line {number}: {exc}") from None
        except (ValueError, RecursionError) as exc:  # bad JSON, 200,000 nested brackets, an integer of 5,000 digits
            raise reports.ReportError(f"report line {number} is not readable JSON ({error_text(exc)})") from None
        if entry["event"] == "flag":
            flags.append((keys.get(entry["index"]), entry["what"][:200]))
            continue
        key = keys[entry["index"]]
        if entry["event"] == "start":
            state["running"] = key
        elif entry["event"] == "observed":
            if flags:
                entry["flagged"] = flags[0][1]
            reported[key] = entry
            state["restored"] += entry.get("restored", [])
            state["running"] = None
        elif entry["event"] == "done":
            reported[("outputs", key)] = entry.get("outputs", [])
            state["running"] = None
            if entry.get("error"):  # the cell raised: kept for diagnoses
                reported[("raised", key)] = {k: entry.get(k) for k in ("error", "line", "code")}


def error_text(exc: BaseException) -> str:
    """'TypeError: unhashable type: 'list'', on one line and short: what the instructor's log and the student read."""
    text = " ".join(str(exc).split())
    text = text if len(text) <= 300 else text[:299] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


LINES_PER_CELL = 4  # result lines read per planned cell (the child writes two: start, then done or observed)
EXTRA_LINES = 64


def _read_results(data: bytes, keys: dict[int, Any], cells: list[Cell],
                  outcome: sandbox.Outcome) -> tuple[dict[Any, dict[str, Any]], Any, list[str], list[tuple[Any, str]]]:
    """The reports in the order they were sent. Once anything was flagged, every later observation is marked
    ``flagged`` (it may be forged): those checks score 0, and the flags are returned for the instructor.

    Every line is checked against its event's schema (``grader.boundary.reports``) before a field is read. A line
    that is not one (unreadable JSON, a field of the wrong type, an index outside the plan), or anything else
    that goes wrong while reading, never raises: reading stops, and ``reported[GRADER_ERROR]`` says why (the
    notebook is then not graded: a grader error, not a verdict on the student)."""
    reported: dict[Any, dict[str, Any]] = {}
    state: dict[str, Any] = {"running": None, "restored": [], "flags": []}
    try:
        _read_lines(data, keys, reported, state)
    except Exception as exc:  # noqa: BLE001  (nothing a report holds may stop the class's grading)
        reported.clear()
        why = str(exc) if isinstance(exc, reports.ReportError) else error_text(exc)
        reported[GRADER_ERROR] = f"the notebook's reports could not be read: {why}"  # type: ignore[assignment]
    running, restored, flags = state["running"], state["restored"], state["flags"]
    problem = ""
    if outcome.stopped or outcome.returncode not in (0, None):
        where = next((c for c in cells if (c.index if c.index >= 0 else ("missing", c.grade_id)) == running), None)

        def stopped() -> str:
            reason = outcome.reason or say("reason_early")
            return (say("stopped_while", reason=reason, cell=where.grade_id or where.index) if where
                    else say("stopped", reason=reason))

        problem = stopped()
        with messages.using("en"):  # the instructor's terminal stays English whatever the notebook's language
            problem = (problem, stopped())
    return reported, problem, sorted(set(restored)), flags[:50]
