"""The honest corpus (tests/honest_corpus/): code written by others (PyTorch's documentation and tutorials, public
repositories, forum answers), adapted only to the names the notebooks expect, graded the way the grader really grades
a submission: the solutions notebook with the entry as its answer cell (the other answers the instructor's), run in
the pool of sandboxed workers (``grader.isolation.pool``) and judged by ``grader.judge.runner.grade_cells``, as the catalogue test of
examples/ does (tests/test_sandbox_attacks.py, test_no_catalogued_answer_is_flagged_or_has_anything_restored).

An entry for an exercise must get full marks and never be flagged; an entry `# exercise: none` (playground code a
student may paste: plots, prints, torch.func, forward mode, NumPy) is added as one more code cell at the end of a
graded notebook (`# notebook:`, notebook 4 by default) and must run without an error, the notebook keeping its full
marks. Any execution policy for student cells (e.g. a RestrictedPython one) must keep all of this true: an honest
answer it refuses is a bug of the policy, not of the answer.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from grader.boundary.limits import NOTEBOOK_SECONDS
from grader.classroom import course
from grader.judge import outputs, runner
from grader.isolation import sandbox

pytestmark = pytest.mark.slow

CORPUS = Path(__file__).resolve().parent / "honest_corpus"
SOLUTIONS = course.REPO / "solutions" / course.ASSIGNMENT
DEFAULT_NOTEBOOK = "04_modern_functions.ipynb"
MINIMUM = 30
TIMEOUT = NOTEBOOK_SECONDS  # seconds per notebook, as nbgrader's TrustedExecute and `grader grade`


@dataclass(frozen=True)
class Entry:
    path: Path
    exercise: str  # an answer cell's grade_id, or "none"
    style: str
    source: str  # where the code comes from (URL, or repo:path)
    notebook: str  # for "none": the notebook the cell is added to
    grader_bug: str = ""  # `# grader-bug:` a right answer the grader refuses today (an expected failure, strict)

    @property
    def name(self) -> str:
        return self.path.stem

    def code(self) -> str:
        return course.mistake_source(self.path)  # the file without its header comment lines


def read_entry(path: Path) -> Entry:
    header: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").split("\n"):
        match = re.match(r"^# (\w[\w-]*): (.*)$", line)
        if not match:
            break
        header.setdefault(match.group(1), match.group(2).strip())
    missing = {"exercise", "style", "source"} - set(header)
    assert not missing, f"{path.name}: the header needs '# exercise:', '# style:' and '# source:' lines (missing {missing})"
    return Entry(path, header["exercise"], header["style"], header["source"], header.get("notebook", DEFAULT_NOTEBOOK),
                 header.get("grader-bug", ""))


ENTRIES = [read_entry(p) for p in sorted(CORPUS.glob("*.py"))]


def _answer_notebooks() -> dict[str, Path]:
    """answer cell grade_id -> the solutions notebook holding it."""
    found = {}
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        for cell in nbformat.read(str(path), as_version=4).cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("solution") and cell.cell_type == "code":
                found[meta["grade_id"]] = path
    return found


def _graded_exercises() -> set[str]:
    found = set()
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        for cell in nbformat.read(str(path), as_version=4).cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("grade") and meta.get("grade_id"):
                found.add(runner.exercise_of(meta["grade_id"]))
    return found


def _submission(entry: Entry, answer_notebooks: dict[str, Path]) -> nbformat.NotebookNode:
    """The solutions notebook with this entry in it: as the exercise's answer cell, or as a last extra cell."""
    if entry.exercise == "none":
        notebook = nbformat.read(str(SOLUTIONS / entry.notebook), as_version=4)
        notebook.cells.append(nbformat.v4.new_code_cell(entry.code()))
        return notebook
    notebook = nbformat.read(str(answer_notebooks[entry.exercise]), as_version=4)
    replaced = 0
    for cell in notebook.cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == entry.exercise:
            cell.source = entry.code()
            replaced += 1
    assert replaced == 1, f"{entry.path.name}: no answer cell {entry.exercise!r} in {answer_notebooks[entry.exercise].name}"
    return notebook


def _instructor_path(entry: Entry, answer_notebooks: dict[str, Path]) -> Path:
    return SOLUTIONS / entry.notebook if entry.exercise == "none" else answer_notebooks[entry.exercise]


@pytest.fixture(scope="module")
def graded():
    """Every entry graded once, in one pool of sandboxed workers (one per core), a notebook per entry."""
    available, why = sandbox.available()
    assert available, f"the grading sandbox cannot start here ({why}): run `make install` as root"
    assert len(ENTRIES) >= MINIMUM, f"{CORPUS} holds {len(ENTRIES)} entries, fewer than {MINIMUM}: was it moved?"
    from grader.isolation.pool import Pool

    answer_notebooks = _answer_notebooks()
    hidden = Path(tempfile.mkdtemp(prefix="honest-hidden-"))
    try:
        with Pool(hide=[hidden]) as pool, ThreadPoolExecutor(max_workers=pool.size) as threads:
            def grade(entry: Entry) -> tuple[str, runner.NotebookResult]:
                path = _instructor_path(entry, answer_notebooks)
                trusted = runner.instructor_cells(nbformat.read(str(path), as_version=4))
                cells = runner.cells_to_run(_submission(entry, answer_notebooks), trusted)
                return entry.name, runner.grade_cells(entry.name, cells, "solutions", TIMEOUT, pool=pool)

            results = dict(threads.map(grade, ENTRIES))
    finally:
        shutil.rmtree(hidden, ignore_errors=True)
    return results


def test_the_corpus_is_there_and_covers_every_exercise():
    """At least 30 entries, each naming where it comes from; two or more for every graded exercise of the four
    notebooks, and several pieces of playground code (`exercise: none`)."""
    assert CORPUS.is_dir(), f"{CORPUS} is missing"
    assert len(ENTRIES) >= MINIMUM, f"{CORPUS} holds {len(ENTRIES)} entries, fewer than {MINIMUM}"
    answers = _answer_notebooks()
    unknown = [e.name for e in ENTRIES if e.exercise != "none" and e.exercise not in answers]
    assert not unknown, f"entries naming no answer cell of solutions/: {unknown}"
    bad_notebook = [e.name for e in ENTRIES if e.exercise == "none" and not (SOLUTIONS / e.notebook).exists()]
    assert not bad_notebook, f"playground entries naming no solutions notebook: {bad_notebook}"
    counts = {exercise: sum(e.exercise == exercise for e in ENTRIES) for exercise in _graded_exercises()}
    thin = {exercise: n for exercise, n in counts.items() if n < 2}
    assert not thin, f"exercises with fewer than two honest entries: {thin}"
    assert sum(e.exercise == "none" for e in ENTRIES) >= 5


def _params(entries: list[Entry]) -> list:
    """An entry with a `# grader-bug:` line is a right answer the grader refuses today: an expected failure that
    turns into an error (strict) once the grader is fixed, so that its header line is removed then."""
    return [pytest.param(e, id=e.name, marks=[pytest.mark.xfail(strict=True, reason=f"grader bug: {e.grader_bug}")]
                         if e.grader_bug else []) for e in entries]


ANSWERS = _params([e for e in ENTRIES if e.exercise != "none"])
PLAYGROUND = _params([e for e in ENTRIES if e.exercise == "none"])


def _verdicts(result: runner.NotebookResult, exercise: str | None = None) -> str:
    return "\n".join(f"  {c.grade_id}: {c.points:g}/{c.max_points:g} {c.status}: {c.message[:600]}"
                     for c in result.cells if exercise is None or runner.exercise_of(c.grade_id) == exercise)


@pytest.mark.parametrize("entry", ANSWERS)
def test_an_honest_answer_gets_full_marks_and_is_never_flagged(graded, entry):
    result = graded[entry.name]
    mine = [c for c in result.cells if runner.exercise_of(c.grade_id) == entry.exercise]
    assert mine, f"{entry.name}: no test cell of {entry.exercise!r} was judged:\n{_verdicts(result)}"
    lost = [c for c in mine if c.points != c.max_points]
    assert not lost and not result.problem, (
        f"{entry.name} ({entry.style}; from {entry.source}) lost points{': ' + result.problem if result.problem else ''}"
        f"\n{_verdicts(result, entry.exercise)}")
    assert result.score == result.max_score, f"{entry.name}: the notebook's other answers lost points:\n{_verdicts(result)}"
    assert not result.flags, f"{entry.name} ({entry.style}) was flagged: {result.flags}"
    assert not result.restored, f"{entry.name}: the guard reports patches this answer never made: {result.restored}"


@pytest.mark.parametrize("entry", PLAYGROUND)
def test_honest_playground_code_runs_in_a_graded_notebook(graded, entry):
    result = graded[entry.name]
    key = outputs.source_key(entry.code())
    shown = [cell_outputs for source_key, cell_outputs in result.outputs if source_key == key]
    assert shown, f"{entry.name}: the added cell is not among the notebook's cells (outputs of {len(result.outputs)})"
    errors = [o for o in shown[0] if o.get("output_type") == "error"]
    assert not errors, (f"{entry.name} ({entry.style}; from {entry.source}) raised in the sandbox: "
                        + " | ".join(f"{o.get('ename')}: {o.get('evalue')}" for o in errors))
    assert not result.problem, f"{entry.name}: grading stopped early: {result.problem}"
    assert result.score == result.max_score, f"{entry.name}: the notebook lost points:\n{_verdicts(result)}"
    assert not result.flags, f"{entry.name} ({entry.style}) was flagged: {result.flags}"
    assert not result.restored, f"{entry.name}: the guard reports patches this cell never made: {result.restored}"
