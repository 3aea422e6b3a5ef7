"""Adversarial submissions, autograded end to end by `nbgrader autograde` with the course's configuration.

Each file in tests/adversarial/ is one student: which notebooks it hands in, which answer cells it replaces with
the code in the file, how the notebook is otherwise edited, and the points per exercise nbgrader must record
(tests/adversarial/README.md describes the header). The students of a class are autograded together in a
temporary course built like ``grader.classroom.course.demo`` (solutions symlinked, `nbgrader generate_assignment`,
`submitted/<student>/autograd/*.ipynb`), then the gradebook, the course folder and the machine are inspected.

The fast tests at the end check the pieces the corpus relies on (`runner.cells_to_run`, `testcells.parse`,
`wire.decode`) without nbgrader.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

from grader.classroom import course
from grader.judge import runner, testcells
from grader.isolation import sandbox
from grader.boundary import wire

CASES_DIR = Path(__file__).resolve().parent / "adversarial"
REPO = course.REPO
SOLUTIONS = REPO / "solutions" / course.ASSIGNMENT
NOTEBOOKS = sorted(p.name for p in SOLUTIONS.glob("*.ipynb"))
TIMEOUT = 20  # --TrustedExecute.timeout: seconds per notebook
SLACK = 5  # seconds a class run may take beyond the sum of its bounds before it is killed (and fails)

AVAILABLE, WHY = sandbox.available()
needs_sandbox = pytest.mark.skipif(not AVAILABLE, reason=f"sandbox unavailable: {WHY}")


# --- the corpus ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    path: Path
    notebooks: tuple[str, ...]
    cells: dict[str, str]  # grade_id -> answer source
    others: str  # "solution" or "stub"
    expect: dict[str, tuple[float, float]]  # exercise -> (lowest, highest) points
    bound: float
    classes: tuple[str, ...] = ("main",)
    transforms: tuple[tuple[str, ...], ...] = ()
    after: tuple[tuple[str, ...], ...] = ()
    why: str = ""
    flagged: tuple[str, ...] | None = None  # exercises whose notebook must be flagged; () = never flagged
    refused: tuple[str, ...] = ()  # exercises whose verdicts must say the policy refused the student's code
    policy_off: bool = False  # `# policy: off`: the case tests the layers beneath the policy; its classes run without
    name: str = ""  # the student's id when it is not the file's name
    assignment: str = course.ASSIGNMENT  # `# assignment: autograd-zh`: the Chinese notebooks (the same cells and checks)
    open: str = ""  # `# open: <why>`: an attack that still works; its score test is a strict xfail until it is closed

    @property
    def student(self) -> str:
        return self.name or self.path.stem


ASSIGNMENTS = course.ASSIGNMENTS  # autograd and its translations (autograd-zh): the same notebooks, cells and checks


@functools.lru_cache(maxsize=None)
def _answer_sources(assignment: str) -> dict[str, str]:
    return course.answer_sources(REPO / "solutions" / assignment)


def _solution_cells(assignment: str = course.ASSIGNMENT) -> dict[str, str]:
    """grade_id -> the instructor's answer in ``assignment``'s solutions (a copy: callers change it)."""
    return dict(_answer_sources(assignment))


def _exercises() -> dict[str, str]:
    """exercise -> the notebook it is in."""
    found = {}
    for name in NOTEBOOKS:
        for cell in nbformat.read(str(SOLUTIONS / name), as_version=4).cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("grade") and meta.get("grade_id"):
                found[runner.exercise_of(meta["grade_id"])] = name
    return found


def read_case(path: Path) -> Case:
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    header: dict[str, list[str]] = {}
    key = None
    body_start = len(lines)
    for number, line in enumerate(lines):
        match = re.match(r"^# (\w+): ?(.*)$", line)
        if match and not line.startswith("# %% cell:"):
            key = match.group(1)
            header.setdefault(key, []).append(match.group(2).strip())
        elif key == "why" and re.match(r"^#\s{2,}\S", line):
            header["why"][-1] += " " + line.lstrip("# ").strip()
        else:
            body_start = number
            break
    body = "\n".join(lines[body_start:]).strip("\n") + "\n"
    assignment = header.get("assignment", [course.ASSIGNMENT])[0]
    assert assignment in ASSIGNMENTS, f"{path.name}: `# assignment: {assignment}` is not one of {ASSIGNMENTS}"
    solutions = _solution_cells(assignment)

    def answer(grade_id: str, source: str) -> str:
        return "\n".join(solutions[grade_id] if line.strip() == "# <solution>" else line for line in source.split("\n"))

    names = header["cell"][0].split()
    cells: dict[str, str] = {}
    if names != ["none"]:
        parts = re.split(r"^# %% cell: (\S+)\n", body, flags=re.M)
        if len(parts) == 1:
            assert len(names) == 1, f"{path.name}: several cells need `# %% cell: <grade_id>` lines"
            cells[names[0]] = answer(names[0], body)
        else:
            assert not parts[0].strip(), f"{path.name}: code before the first `# %% cell:` line"
            cells = {parts[k]: answer(parts[k], parts[k + 1]) for k in range(1, len(parts), 2)}
            assert list(cells) == names, f"{path.name}: `# cell:` says {names}, the sections are {list(cells)}"
    notebook = header["notebook"][0]
    expect = {}
    for pair in header["expect"][0].split():
        exercise, value = pair.split("=")
        low, _, high = value.partition("..")
        expect[exercise] = (float(low), float(high or low))
    return Case(
        path=path,
        notebooks=tuple(NOTEBOOKS) if notebook == "all" else tuple(notebook.split()),  # one or several
        cells=cells,
        others=header["others"][0],
        expect=expect,
        bound=float(header["bound"][0]),
        classes=tuple(header.get("class", ["main"])[0].split()),
        transforms=tuple(tuple(t.split(" ", 2)) for t in header.get("transform", [])),
        after=tuple(tuple(a.split()) for a in header.get("after", [])),
        why=" ".join(header.get("why", [])),
        flagged=(None if "flagged" not in header else
                 tuple(e for e in header["flagged"][0].split() if e != "none")),
        refused=tuple(header.get("refused", [""])[0].split()),
        policy_off=header.get("policy", ["on"])[0].strip() == "off",
        assignment=assignment,
        open=" ".join(header.get("open", [])),
    )


ALTERNATIVES_DIR = REPO / "examples" / "alternatives"
PERFECT = CASES_DIR / "0-control-perfect.py"


def alternative_case(path: Path) -> Case:
    """A right answer written another way (examples/alternatives/): full marks in its notebook, never flagged."""
    exercise = re.search(r"^# exercise: (\S+)", path.read_text(encoding="utf-8"), re.M).group(1)  # type: ignore[union-attr]
    notebook = _exercises()[exercise]
    full = read_case(PERFECT).expect
    return Case(path=path, notebooks=(notebook,), cells={exercise: course.mistake_source(path)}, others="solution",
                expect={e: full[e] for e, nb in _exercises().items() if nb == notebook}, bound=20,
                classes=("controls",), why=f"a right answer written another way ({path.name}): never flagged",
                flagged=(), name=f"alternative-{path.stem}")


def _notebook_header(path: Path) -> list[str]:
    match = re.search(r"^# notebook: (.+)$", path.read_text(encoding="utf-8"), re.M)
    return match.group(1).split() if match else []


# Cases of a notebook not in solutions/ yet (notebook 4 while it is written) wait for it: the well-formedness test
# below fails meanwhile.
WAITING = [p for p in sorted(CASES_DIR.glob("*.py"))
           if not _notebook_header(p) or not set(_notebook_header(p)) <= {*NOTEBOOKS, "all"}]
CASES = [read_case(p) for p in sorted(CASES_DIR.glob("*.py")) if p not in WAITING] + [
    alternative_case(p) for p in sorted(ALTERNATIVES_DIR.glob("*.py"))
    if re.search(r"^# exercise: (\S+)", p.read_text(encoding="utf-8"), re.M).group(1) in _exercises()]
CLASSES = sorted({c for case in CASES for c in case.classes})


def students_of(klass: str) -> list[Case]:
    return [case for case in CASES if klass in case.classes]


# --- notebook edits (`# transform:`) -----------------------------------------------------------------


def _find(nb: nbformat.NotebookNode, grade_id: str) -> int | None:
    """The cell with this grade_id, else the cell with this id (a playground cell: `code-889e48bd`)."""
    for index, cell in enumerate(nb.cells):
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id:
            return index
    for index, cell in enumerate(nb.cells):
        if cell.get("id") == grade_id:
            return index
    return None


def _source(nb: nbformat.NotebookNode, index: int, text: str) -> None:
    nb.cells[index].source = text.replace("\\n", "\n")


def _delete(nb: nbformat.NotebookNode, index: int) -> None:
    del nb.cells[index]


def _rename(nb: nbformat.NotebookNode, index: int, new_id: str) -> None:
    nb.cells[index].metadata["nbgrader"]["grade_id"] = new_id


TRANSFORMS = {"source": _source, "delete": _delete, "rename": _rename}


# --- building and grading a class ----------------------------------------------------------------------


def _hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@dataclass
class GradedClass:
    name: str
    root: Path
    returncode: int | None
    seconds: float
    killed: bool
    log: str
    scores: dict[str, dict[str, tuple[float, float]]]
    submitted_before: dict[str, str]
    submitted_after: dict[str, str]
    notebook_seconds: dict[tuple[str, str], float] = field(default_factory=dict)
    assignment: str = course.ASSIGNMENT

    def verdicts(self, student: str, exercises: set[str] | None = None) -> str:
        """The test cells' outputs in the student's autograded notebooks (what nbgrader scored), and its log lines."""
        out = []
        for path in sorted((self.root / "autograded" / student / self.assignment).glob("*.ipynb")):
            for cell in nbformat.read(str(path), as_version=4).cells:
                meta = cell.get("metadata", {}).get("nbgrader", {})
                if not meta.get("grade") or (exercises and runner.exercise_of(meta.get("grade_id", "")) not in exercises):
                    continue
                text = " ".join(o.get("evalue", "") or o.get("text", "") for o in cell.get("outputs", []))
                out.append(f"  {meta.get('grade_id')}: {' '.join(text.split())[:240]}")
        lines = [line for line in self.log.splitlines() if f"{student}/" in line and ("WARNING" in line or "ERROR" in line)
                 and "No submitted file" not in line]
        return "\n".join(out + ["  log: " + line[:300] for line in lines])


def _template(workdir: Path) -> Path:
    """A course with the assignment generated (release/ and gradebook.db), copied for each class."""
    root = workdir / "template"
    root.mkdir(parents=True)
    os.symlink(REPO / "solutions", root / "solutions")
    _release(root, course.ASSIGNMENT)
    return root


def _release(root: Path, assignment: str) -> None:
    """`nbgrader generate_assignment` of ``assignment`` in the course ``root`` (release/ and its gradebook)."""
    done = subprocess.run(course.nbgrader_command("generate_assignment", assignment, "--force",
                                                  "--CourseDirectory.release_directory=release",
                                                  f"--CourseDirectory.root={root}"),
                          cwd=REPO, env=course.nbgrader_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def _submit(case: Case, root: Path, scratch: Path) -> None:
    answers = _solution_cells(case.assignment) if case.others == "solution" else {}
    answers.update(case.cells)
    built = scratch / case.student
    course.build_submission(root / "release" / case.assignment, answers, built)
    target = root / "submitted" / case.student / case.assignment
    target.mkdir(parents=True)
    applied = set()
    for name in case.notebooks:
        nb = nbformat.read(str(built / name), as_version=4)
        for number, (op, grade_id, *args) in enumerate(case.transforms):
            index = _find(nb, grade_id)
            if index is not None:
                TRANSFORMS[op](nb, index, *args)
                applied.add(number)
        nbformat.write(nb, str(target / name))
    assert len(applied) == len(case.transforms), f"{case.path.name}: a transform names a cell its notebooks lack"


def assignment_of(klass: str) -> str:
    """The one assignment a class hands in (`# assignment:`; one `nbgrader autograde` run grades one assignment)."""
    assignments = {case.assignment for case in students_of(klass)}
    assert len(assignments) == 1, f"class {klass} mixes assignments {sorted(assignments)}: one class, one assignment"
    return assignments.pop()


def policy_off(klass: str) -> bool:
    """A class runs without the course's policy (as if it had a hole) when one of its students tests the layers
    beneath it (`# policy: off`): the sandbox, the guard, the audit hook, the channel. Students of such a class
    that the policy would refuse keep testing those layers end to end; the `policy` class tests the policy."""
    return any(case.policy_off for case in students_of(klass))


# Classes graded together by one `nbgrader autograde` run here (a run's fixed cost, nbgrader and the pool starting,
# is 5 to 15 s: a minute of `make test` over these classes). A run's classes hand in the same assignment with the
# same policy setting, so each student is graded exactly as in a run of its own class; a student in two of them is
# graded once. Classes a run must not share stay alone: those whose cases could stop a whole run (results-file),
# those whose honest students must follow their attackers on the same workers (pid1-*, scratch), and those
# test_cluster.py grades on Dask class by class (main, pid1-*, scratch).
SHARED_RUNS: tuple[tuple[str, ...], ...] = (
    ("channel", "forgeries", "forgeries4", "guard-reach"),  # inside the sandbox, policy off
    ("policy", "trust3", "trust3b"),  # under the course's policy
)


def run_of(klass: str) -> tuple[str, ...]:
    """The classes graded in the same nbgrader run as ``klass`` (itself alone, unless SHARED_RUNS says otherwise)."""
    return next((run for run in SHARED_RUNS if klass in run), (klass,))


def run_name(klass: str) -> str:
    return "+".join(run_of(klass))


def students_of_run(klass: str) -> list[Case]:
    """The students of ``klass``'s run, each once (in the order of the corpus)."""
    members = {case.student for other in run_of(klass) for case in students_of(other)}
    return [case for case in CASES if case.student in members]


def grade_class(klass: str, workdir: Path, template: Path, slowdown: float = 1.0,
                students: list[Case] | None = None, classes: tuple[str, ...] | None = None) -> GradedClass:
    """Autograde the class (or ``students``, some of it, with the class's policy setting) with nbgrader; killed
    past the sum of its students' bounds (times ``slowdown``). ``classes``: several classes in this one run (their
    students, unless ``students`` is given; one assignment and one policy setting for all of them); the course
    folder is then named after all of them."""
    classes = classes or (klass,)
    if students is None:
        seen = {case.student for other in classes for case in students_of(other)}
        students = [case for case in CASES if case.student in seen]
    assert len({assignment_of(other) for other in classes}) == 1, f"{classes}: one run, one assignment"
    assert len({policy_off(other) for other in classes}) == 1, f"{classes}: one run, one policy setting"
    assignment = assignment_of(klass)
    klass = "+".join(classes)
    root = workdir / klass
    shutil.copytree(template, root, symlinks=True)
    if not (root / "release" / assignment).is_dir():  # the template releases the English assignment
        _release(root, assignment)
    scratch = workdir / f"{klass}-built"
    for case in students:
        _submit(case, root, scratch)
    before = _hashes(root / "submitted")
    limit = sum(case.bound for case in students) * slowdown + SLACK
    log_path = workdir / f"{klass}.log"
    command = course.nbgrader_command("autograde", assignment, "--force", f"--CourseDirectory.root={root}",
                                      "--CourseDirectory.release_directory=release",
                                      f"--TrustedExecute.timeout={TIMEOUT}",
                                      *(["--TrustedExecute.policy=False"] if policy_off(classes[0]) else []))
    started = time.monotonic()
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, cwd=REPO, env=course.nbgrader_env(), stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        killed = False
        try:
            process.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            killed = True
            os.killpg(process.pid, signal.SIGKILL)  # the process group of the nbgrader run started here
            process.wait()
    seconds = time.monotonic() - started
    text = log_path.read_text(errors="replace")
    db = root / "gradebook.db"
    graded = GradedClass(klass, root, process.returncode, seconds, killed, text,
                         course.gradebook_scores(f"sqlite:///{db}", assignment), before, _hashes(root / "submitted"),
                         assignment=assignment)
    for student, notebook, secs in re.findall(
            rf"(\S+)/{re.escape(assignment)}/(\S+): [\d.]+/[\d.]+ points \(trusted grading, ([\d.]+) s\)", text):
        graded.notebook_seconds[(student.split("]")[-1].strip(), notebook)] = float(secs)
    return graded


_GRADED: dict[str, GradedClass] = {}


@pytest.fixture(scope="module")
def classroom(tmp_path_factory, released_template):
    """Grades each class once (lazily), for every test of this module (each in a copy of conftest's template)."""
    workdir = tmp_path_factory.mktemp("adversarial")

    def get(klass: str) -> GradedClass:
        """The run that graded ``klass`` (with the other classes of its run: SHARED_RUNS)."""
        run = run_name(klass)
        if run not in _GRADED:
            _GRADED[run] = grade_class(klass, workdir, released_template, classes=run_of(klass))
        return _GRADED[run]

    yield get
    _GRADED.clear()


# --- checks after grading (`# after:`) -------------------------------------------------------------


def _processes_with(marker: str) -> list[str]:
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "name", "cmdline"]):
        try:
            text = " ".join([proc.info["name"] or "", *(proc.info["cmdline"] or [])])
        except (psutil.Error, TypeError):
            continue
        if marker in text and proc.pid != os.getpid():
            found.append(f"{proc.pid}: {text[:200]}")
    return found


def no_leftover_processes(graded: GradedClass, case: Case, marker: str) -> None:
    deadline = time.monotonic() + 5
    while (left := _processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, f"processes of {case.student} survived grading:\n" + "\n".join(left)


def course_untouched(graded: GradedClass, case: Case, marker: str) -> None:
    """Nothing outside the student's own folders mentions the marker; no file named after it anywhere."""
    touched = []
    for path in graded.root.rglob("*"):
        if marker in path.name:
            touched.append(f"created {path}")
        elif path.is_file() and f"/{case.student}/" not in str(path) and marker.encode() in path.read_bytes():
            touched.append(f"wrote into {path}")
    for folder, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in (".venv", ".git", "__pycache__")]
        touched += [f"created {folder}/{name}" for name in files + dirs if marker in name]
    for folder in (Path(tempfile.gettempdir()),):
        touched += [f"created {p}" for p in folder.glob(f"*{marker}*")]
    assert not touched, f"{case.student} changed what it must not:\n" + "\n".join(touched[:20])


AFTER = {"no-leftover-processes": no_leftover_processes, "course-untouched": course_untouched}


# --- the end-to-end tests ---------------------------------------------------------------------------------


def _ids(item: tuple[str, Case]) -> str:
    return f"{item[0]}/{item[1].student}"


# `controls` (examples/alternatives/: right answers written another way, full marks, never flagged) is graded under
# the course's policy by tests/test_honest_corpus.py (test_no_catalogued_answer_...), which asserts exactly that;
# tests/verdicts_snapshot.py still grades it as a class. Every other class is graded here, end to end.
GRADED_HERE = [klass for klass in CLASSES if klass != "controls"]
STUDENTS = [(klass, case) for klass in GRADED_HERE for case in students_of(klass)]


@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize("klass,case", STUDENTS, ids=[_ids(s) for s in STUDENTS])
def test_each_student_gets_the_points_its_code_deserves(classroom, klass, case, request):
    if case.open:  # a known hole: the test turns red (XPASS) the day it is closed, so the header goes
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"open: {case.open}"))
    graded = classroom(klass)
    assert case.student in graded.scores, (
        f"{case.student} is not in the gradebook (nbgrader exit code {graded.returncode}, killed: {graded.killed})")
    got = {exercise: score for exercise, (score, _) in graded.scores[case.student].items()}
    wrong = {e: got.get(e) for e in set(got) | set(case.expect)
             if not (case.expect.get(e, (0.0, 0.0))[0] <= got.get(e, 0.0) <= case.expect.get(e, (0.0, 0.0))[1])}
    assert not wrong, (f"{case.student} ({case.why})\n  expected {case.expect}\n  got      {got}\n"
                       f"  verdicts:\n{graded.verdicts(case.student, set(wrong))}")


@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize("klass,case", STUDENTS, ids=[_ids(s) for s in STUDENTS])
def test_each_student_costs_at_most_its_bound(classroom, klass, case):
    graded = classroom(klass)
    times = {nb: s for (student, nb), s in graded.notebook_seconds.items() if student == case.student}
    assert times, f"no grading time logged for {case.student}"
    assert all(s <= case.bound for s in times.values()), f"{case.student} took {times} (bound {case.bound:g} s)"


@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize("klass,case,check", [(k, c, a) for k, c in STUDENTS for a in c.after],
                         ids=[f"{k}/{c.student}/{a[0]}" for k, c in STUDENTS for a in c.after])
def test_after_grading(classroom, klass, case, check):
    graded = classroom(klass)
    AFTER[check[0]](graded, case, *check[1:])


def saved_results(graded: GradedClass, case: Case) -> dict[str, dict]:
    """notebook file name -> the grader's saved results for it (grader_results/<assignment>/<student>/<id>.json)."""
    folder = graded.root / "grader_results" / case.assignment / case.student
    return {name: json.loads((folder / f"{Path(name).stem}.json").read_text(encoding="utf-8"))
            for name in case.notebooks if (folder / f"{Path(name).stem}.json").exists()}


FLAGGED = [(klass, case) for klass, case in STUDENTS if case.flagged is not None]


@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize("klass,case", FLAGGED, ids=[_ids(s) for s in FLAGGED])
def test_flagged_students_are_flagged_and_controls_never(classroom, klass, case):
    """`# flagged: square`: the notebook holding square has a non-empty `flags` list ({"cell", "what"}: code that
    reached the grader's internals through ctypes, gc or frames); `# flagged: none`: no notebook has any flag."""
    graded = classroom(klass)
    saved = saved_results(graded, case)
    assert set(saved) == set(case.notebooks), f"{case.student}: no saved results for {set(case.notebooks) - set(saved)}"
    if not case.flagged:
        flagged = {name: data.get("flags") for name, data in saved.items() if data.get("flags")}
        assert not flagged, f"{case.student} ({case.why}) was flagged: {flagged}"
        return
    exercises = _exercises()
    for exercise in case.flagged:
        data = saved[exercises[exercise]]
        assert "flags" in data, f"{case.student}: the saved results have no `flags` key (keys: {sorted(data)})"
        flags = data["flags"]
        assert isinstance(flags, list) and flags and all(isinstance(f, dict) and {"cell", "what"} <= set(f)
                                                         for f in flags), (
            f"{case.student} ({case.why}) is not flagged in {exercises[exercise]}: flags = {flags!r}")


REFUSED = [(klass, case) for klass, case in STUDENTS if case.refused]


@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize("klass,case", REFUSED, ids=[_ids(s) for s in REFUSED])
def test_code_the_policy_refuses_is_refused_with_a_reason_the_student_can_read(classroom, klass, case):
    """`# refused: square`: the verdicts of the notebook holding square say that the course's policy refused the
    student's code (grader.sandboxed.policy), and which construct, instead of a silent zero."""
    graded = classroom(klass)
    saved = saved_results(graded, case)
    exercises = _exercises()
    for exercise in case.refused:
        text = json.dumps(saved[exercises[exercise]], ensure_ascii=False)
        assert "not available in graded code" in text or "评分代码中不能使用" in text, (
            f"{case.student} ({case.why}): no refusal in {text[:2000]}")


RUNS_HERE = list(dict.fromkeys(run_of(klass)[0] for klass in GRADED_HERE))  # one class naming each run


@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize("klass", RUNS_HERE, ids=[run_name(k) for k in RUNS_HERE])
def test_the_class_is_graded_in_time_without_errors_and_submissions_unchanged(classroom, klass):
    """Each nbgrader run (a class, or the classes SHARED_RUNS grades together): in time, no error, every student."""
    graded = classroom(klass)
    students = students_of_run(klass)
    bound = sum(case.bound for case in students)
    assert not graded.killed, f"nbgrader autograde did not finish in {bound + SLACK:g} s; it was killed"
    assert graded.seconds <= bound, f"grading took {graded.seconds:.0f} s, more than the sum of the bounds ({bound:g} s)"
    errors = [line for line in graded.log.splitlines() if "ERROR" in line]
    assert graded.returncode == 0 and not errors, (f"nbgrader exit code {graded.returncode}:\n"
                                                  + "\n".join(errors[:20]))
    assert set(graded.scores) == {case.student for case in students}
    assert graded.submitted_after == graded.submitted_before, "submitted notebooks changed during grading"


# --- the pool of workers, directly (deterministic where nbgrader's scheduling is not) ------------------


def _run_plans(plans: list[str], workers: int = 1, timeout: float = 10) -> list[tuple[list[dict], object]]:
    from grader.isolation.pool import Pool

    hidden = Path(tempfile.mkdtemp(prefix="adversarial-hidden-"))
    try:
        with Pool(hide=[hidden], workers=workers) as pool:
            time.sleep(1.5)  # workers that die at start (see the test above) are replaced before the first plan
            out = []
            for source in plans:
                data, outcome = pool.run_plan([{"kind": "code", "index": 0, "source": source, "restricted": False}], timeout)
                out.append(([json.loads(line) for line in data.decode().splitlines() if line.strip()], outcome))
            return out
    finally:
        shutil.rmtree(hidden, ignore_errors=True)


_REPORT = """
import json, os, sys
def _report(**info):
    raise RuntimeError(json.dumps(info))  # the cell's error reaches the test in the 'done' report
"""


@pytest.mark.slow
@needs_sandbox
def test_pool_workers_are_alive_a_second_after_the_pool_started():
    """The pool starts its workers from short-lived threads; bwrap --die-with-parent must not kill them when
    those threads end (else the first notebook given to each worker is lost: 'the grading worker died')."""
    from grader.isolation.pool import Pool

    hidden = Path(tempfile.mkdtemp(prefix="adversarial-hidden-"))
    try:
        with Pool(hide=[hidden], workers=2) as pool:
            time.sleep(1.5)
            workers = list(pool.idle.queue)
            assert [w.alive() for w in workers] == [True] * len(workers), (
                "workers died after start: " + ", ".join(str(w.process.returncode) for w in workers))
    finally:
        shutil.rmtree(hidden, ignore_errors=True)


@pytest.mark.slow
@needs_sandbox
def test_a_notebook_leaves_nothing_for_the_next_notebook_of_its_worker():
    plant = _REPORT + """
written = []
for folder in [*sys.path, "/tmp", "..", os.path.expanduser("~")]:
    try:
        with open(os.path.join(folder, "sqlite3.py"), "w") as f:
            f.write("raise SystemExit('planted sqlite3 imported')\\n")
        with open(os.path.join(folder, "adversarial_note.txt"), "w") as f:
            f.write("left by the previous notebook")
        written.append(folder)
    except OSError:
        pass
_report(written=written)
"""
    look = _REPORT + """
import sqlite3
seen = [os.path.join(folder, name) for folder in [*sys.path, "/tmp", "..", os.path.expanduser("~")]
        if os.path.isdir(folder) for name in os.listdir(folder) if name in ("adversarial_note.txt", "sqlite3.py")]
_report(seen=seen, sqlite3=sqlite3.__file__)
"""
    (first, _), (second, outcome) = _run_plans([plant, look], workers=1)
    def said(events: list[dict]) -> list[dict]:
        return [json.loads(e["error"].removeprefix("RuntimeError: ")) for e in events
                if e.get("error", "").startswith("RuntimeError: {")]

    reports = said(second)
    written = [r["written"] for r in said(first)]
    assert reports, (f"the second notebook did not run ({outcome}, results {second}): the sqlite3.py planted by the "
                     f"first one (in {written}) ran in it")
    assert reports[0]["seen"] == [], f"the next notebook sees what the previous one left: {reports[0]['seen']}"
    assert "planted" not in reports[0]["sqlite3"]


# --- fast unit tests ----------------------------------------------------------------------------------


def test_every_case_file_is_well_formed():
    assert not WAITING, f"cases of notebooks not in solutions/: {[p.name for p in WAITING]}"
    exercises = _exercises()
    answer_cells = set(_solution_cells())
    assert all(set(_solution_cells(a)) == answer_cells for a in ASSIGNMENTS), "a translation has other answer cells"
    for klass in CLASSES:
        assignment_of(klass)  # one assignment per class
    for run in SHARED_RUNS:  # a shared run: existing classes, each in one run, one assignment and policy setting
        assert set(run) <= set(GRADED_HERE) and all(run_of(klass) == run for klass in run), run
        assert len({assignment_of(k) for k in run}) == 1 and len({policy_off(k) for k in run}) == 1, run
    assert {"0-control-perfect", "1-control-blank"} <= {case.student for case in CASES}
    for case in CASES:
        assert case.others in ("solution", "stub"), case.path.name
        assert set(case.cells) <= answer_cells, f"{case.path.name}: unknown answer cells {set(case.cells) - answer_cells}"
        assert set(case.expect) <= set(exercises), f"{case.path.name}: unknown exercises"
        for exercise in case.expect:
            assert exercises[exercise] in case.notebooks, f"{case.path.name}: {exercise} is not in {case.notebooks}"
        assert all(op in TRANSFORMS for op, *_ in case.transforms), case.path.name
        assert all(check[0] in AFTER for check in case.after), case.path.name
        assert case.bound > 0 and case.why, case.path.name
        assert all(exercises.get(e) in case.notebooks for e in case.flagged or ()), f"{case.path.name}: `# flagged:`"
        for source in case.cells.values():
            compile(source, str(case.path), "exec")


def _instructor(name: str = "03_double_backward.ipynb"):
    return nbformat.read(str(SOLUTIONS / name), as_version=4)


def test_cells_to_run_checks_edited_deleted_and_renamed_test_cells_as_the_instructor_wrote_them():
    instructor = _instructor()
    trusted = runner.instructor_cells(instructor)
    submission = _instructor()
    edited = _find(submission, "square-forward")
    submission.cells[edited].source = "pass"
    _delete(submission, _find(submission, "square-first-order"))
    _rename(submission, _find(submission, "square-second-order"), "my-own-cell")
    setup = _find(submission, "setup")
    submission.cells[setup].source = "import torch\ntorch.autograd.gradcheck = lambda *a, **k: True"

    cells = runner.cells_to_run(submission, trusted)
    graded = {c.grade_id: c for c in cells if c.graded}
    expected = {g for g, c in trusted.items() if c.metadata["nbgrader"].get("grade")}
    assert set(graded) == expected
    for grade_id in expected:
        assert graded[grade_id].source == trusted[grade_id].source
        assert graded[grade_id].calls == testcells.parse(trusted[grade_id].source, grade_id)
    assert graded["square-forward"].index == edited
    assert graded["square-first-order"].index == -1  # deleted: checked at the end
    assert graded["square-second-order"].index == -1  # renamed: the instructor's cell is checked at the end
    renamed = [c for c in cells if c.grade_id == "my-own-cell"]
    assert len(renamed) == 1 and not renamed[0].graded and renamed[0].points == 0
    assert [c.source for c in cells if c.grade_id == "setup"] == [trusted["setup"].source]
    assert [c.index for c in cells][-2:] == [-1, -1]


def test_cells_to_run_does_not_count_a_copied_test_cell_twice():
    trusted = runner.instructor_cells(_instructor())
    submission = _instructor()
    index = _find(submission, "square-structure")
    submission.cells.insert(index + 1, nbformat.from_dict(json.loads(json.dumps(submission.cells[index]))))
    submission.cells[index + 1].metadata["nbgrader"]["points"] = 100
    cells = runner.cells_to_run(submission, trusted)
    graded = [c for c in cells if c.graded]
    assert [c.grade_id for c in graded].count("square-structure") == 1
    assert sum(c.points for c in graded) == sum(float(c.metadata["nbgrader"].get("points", 0))
                                               for c in trusted.values() if c.metadata["nbgrader"].get("grade"))


@pytest.mark.parametrize("source", [
    "import os\nchecks.forward('square', Square.apply)",
    "from grader import checks\nx = 1\nchecks.forward('square', Square.apply)",
    "from grader import checks, os\nchecks.forward('square', Square.apply)",
    "import grader, os\nchecks.forward('square', Square.apply)",
    "from os import system\nchecks.forward('square', Square.apply)",
    "checks.forward('square', Square.apply, shapes=__import__('os').system('true'))",
    "checks.forward('square', Square.apply, seed=len('x'))",
    "checks.forward('square', (lambda x: x))",
    "checks.forward('square', Square.apply)[0]",
    "checks.forward('square', get_ipython().user_ns['Square'].apply)",
    "checks.forward(exercise='square', fn=Square.apply)",
    "checks.run_check('forward', 'square', Square.apply, None, 0)",
    "checks.__dict__['forward']('square', Square.apply)",
    "basics.check_vjp(vector_jacobian_product, **{'sizes': (3,)})",
    "basics.observe('check_vjp', vector_jacobian_product)",
    "os.checks.forward('square', Square.apply)",
    "if True:\n    checks.forward('square', Square.apply)",
    "assert checks.forward('square', Square.apply) is None",
    "with open('x'):\n    checks.forward('square', Square.apply)",
    "from grader import checks",
    "",
    "checks.forward('square', Square.apply",
])
def test_testcells_parse_refuses_anything_but_grader_imports_and_literal_check_calls(source):
    with pytest.raises(testcells.UnsupportedTestCell):
        testcells.parse(source, "square-forward")


def test_testcells_parse_reads_every_test_cell_of_the_course():
    for name in NOTEBOOKS:
        for grade_id, cell in runner.instructor_cells(_instructor(name)).items():
            if cell.metadata["nbgrader"].get("grade"):
                calls = testcells.parse(cell.source, grade_id)
                assert calls and any(c.hidden for c in calls) and not all(c.hidden for c in calls)


def _tensor(**fields):
    return {"__tensor__": "float64", "shape": [2], "data": [1.0, 2.0], **fields}


@pytest.mark.parametrize("obj", [
    _tensor(__tensor__="complex128"),
    _tensor(__tensor__="object"),
    _tensor(__tensor__=None),
    _tensor(shape=[3]),
    _tensor(shape=[-2]),
    _tensor(shape=[2.0]),
    _tensor(shape="2"),
    _tensor(shape=[2, 10**7]),
    _tensor(shape=[1000, 1000, 1000], data=[]),
    _tensor(data="12"),
    _tensor(data=[1.0, "2"]),
    _tensor(data=[1.0, [2.0]]),
    _tensor(data=[1.0, None]),
    _tensor(data=[1.0, {"__tensor__": "float64", "shape": [], "data": [1.0]}]),
    {"__tensor__": "float64", "data": [1.0]},
    {"__tensor__": "float64", "shape": [1]},
    [_tensor(shape=[600_000], data=[0.0] * 600_000), _tensor(shape=[600_000], data=[0.0] * 600_000)],
    {"a": json.loads("[" * 40 + "0" + "]" * 40)},
    {"__tensor__": "int64", "shape": [1], "data": [10**30]},
    {"__tensor__": "int32", "shape": [1], "data": [2**40]},
    ("a tuple", "from no JSON"),
    {1, 2},
    b"bytes",
    object(),
])
def test_wire_decode_refuses_malformed_observations(obj):
    with pytest.raises(wire.WireError):
        wire.decode(obj)


def test_wire_decode_reads_what_encode_writes():
    import torch

    value = {"forward": {"value": torch.arange(6, dtype=torch.float64).reshape(2, 3), "node": "Square"},
             "grads": [torch.ones(2, dtype=torch.float32), None, torch.tensor(True)]}
    back = wire.decode(json.loads(json.dumps(wire.encode(value))))
    assert torch.equal(back["forward"]["value"], value["forward"]["value"])
    assert back["grads"][0].dtype == torch.float32 and back["grads"][1] is None and back["grads"][2].item() is True


def test_the_guard_puts_back_the_grader_tables_and_names_shadowing_builtins():
    """What a cell can change in place (the grader's registries, the frozen dataclasses in them) or add to a torch
    module (a name shadowing a builtin for that module's functions) is put back and reported; a new name that does
    not shadow anything (a submodule imported later) stays."""
    import torch._functorch.eager_transforms as eager

    from grader.sandboxed import child, observe, observe_functions
    from grader.spec import functions

    guard = child.Guard()
    assert guard.restore() == []
    spec, observers = functions.CHECKS["check_hvp"], dict(observe.OBSERVERS)
    setup, function_observers = functions.CHECKS["check_vjp"].setup, dict(observe_functions.OBSERVERS)
    functions.CHECKS["check_hvp"] = "forged"
    object.__setattr__(functions.CHECKS["check_vjp"], "setup", lambda *args: [])
    observe_functions.OBSERVERS["check_penalty_value"] = lambda *args: {}
    observe.OBSERVERS.clear()
    eager.isinstance = lambda *args: True
    eager.a_later_submodule = "kept"
    try:
        replaced = guard.restore()
        assert functions.CHECKS["check_hvp"] is spec and observe.OBSERVERS == observers
        assert functions.CHECKS["check_vjp"].setup is setup and observe_functions.OBSERVERS == function_observers
        assert "isinstance" not in vars(eager) and eager.a_later_submodule == "kept"
        assert "torch._functorch.eager_transforms.isinstance (added)" in replaced
        assert "the contents of a table of the grader's" in replaced
        assert not [r for r in replaced if "a_later_submodule" in r]
        assert guard.restore() == []
    finally:
        vars(eager).pop("a_later_submodule", None)
