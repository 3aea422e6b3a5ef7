"""Grading on Dask workers (issue 10, part 1): a real scheduler and real workers, on loopback, started here.

`dask scheduler` and two `dask worker` processes (each with its nanny, one thread, and the sandboxed graders the
grading process starts on it) grade through `nbgrader autograde` with `GRADER_SCHEDULER` set:

- the demo class gets exactly the verdicts the local pool gives;
- the adversarial corpus (tests/test_adversarial.py) holds as it does locally, every expectation, for the classes
  and students that attack what a Dask worker changes (NOT_ON_DASK and MAIN_ON_DASK say which and why; the time
  bounds with a margin for the Dask processes sharing this machine's cores);
- a Dask worker killed in the middle of a class: its notebooks are graded elsewhere, none twice, none charged;
- a worker running another grader package, or a scheduler nobody listens at: one clear line, exit 1, nothing
  recorded.

The cluster is authenticated (issue 19): mutual TLS with certificates the course makes (`python -m grader.isolation.cluster
certificates`); a worker without them, or with another CA's, never joins; a certified worker's answer is plain
data, so a pickle in it runs nothing in the grading process; the grading process checks each worker's grader
package with a challenge the worker cannot answer without the same sources, even when it forges its fingerprint.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from grader.isolation import cluster, pool as local, sandbox
from grader.classroom import course
# The adversarial corpus's end-to-end tests, run here too: with this module's `classroom`, the classes and students
# chosen below are graded through Dask, and every expectation of test_adversarial.py holds for them.
# (The time bounds are asserted below, with a margin for the Dask processes on this machine.)
import test_adversarial as local_corpus
from test_adversarial import AVAILABLE, WHY, GradedClass, _ids, grade_class, students_of

# What a Dask worker changes is the process around the sandboxes: the worker that starts them (their limits, the
# folders they hide, the scratch), bubblewrap's pid 1 holding the pipe to that worker, the later tasks that worker
# runs, and the answers that come back over TLS. The classes that attack those are graded on Dask; the code that
# runs inside the sandbox (the notebook's process, the guard, the observers, the policy, the channel and the results
# file between the notebook and the worker) and the judge are the same code wherever the sandbox runs, and the
# classes that attack only that are graded in test_adversarial.py (every class there). Each class graded here has
# the honest control 0-control-perfect, and the demo class below proves right and mistaken answers on Dask.
NOT_ON_DASK = {
    "controls": "right answers written another way: judged by the same judge wherever they ran",
    "guard-reach": "the guard, inside the sandbox",
    "policy": "the policy, applied inside the sandbox",
    "forgeries": "observations forged inside the sandbox",
    "forgeries4": "notebook 4's observers forged inside the sandbox",
    "channel": "the channel between the notebook's process and the worker, inside the sandbox",
    "results-file": "the results file between the notebook's process and the worker, inside the sandbox",
    "trust3": "what the observers trust inside the sandbox (helper Functions, tensor subclasses, ctx, saved-tensor hooks)",
    "trust3-zh": "the same in the Chinese notebooks: inside the sandbox",
    "trust3b": "where a derivative comes from (forward mode, the engine, graph nodes), observed inside the sandbox",
}
# `main` on Dask: the students that try the walls of the sandbox a Dask worker starts (time, memory, output, files,
# processes, modules left for the next student on that worker) or end their kernel early, with the honest and blank
# controls. The rest of `main` forges the grader's code inside the sandbox, graded in test_adversarial.py. (The time
# limit on a worker: ignores-signals, which waits out the limit asleep; infinite-loop, the same limit, would spend
# 20 s of a core the other tests need.)
MAIN_ON_DASK = ("0-control-perfect", "1-control-blank", "ignores-signals", "memory-bomb", "output-flood", "fork-leftover",
                "read-solutions", "write-course", "plant-module", "planted-module-victim", "exit-later-cell", "sys-exit")


def dask_students(klass: str) -> list:
    """The students of ``klass`` graded on Dask."""
    return [case for case in students_of(klass) if klass != "main" or case.student in MAIN_ON_DASK]


CLASSES = [klass for klass in local_corpus.CLASSES if klass not in NOT_ON_DASK]
STUDENTS = [(klass, case) for klass in CLASSES for case in dask_students(klass)]
FLAGGED = [(klass, case) for klass, case in STUDENTS if case.flagged is not None]
AFTER = [(klass, case, check) for klass, case in STUDENTS for check in case.after]
from test_course import expected_scores
from test_gradebook_postgres import JOBS, postgres_url  # noqa: F401 (a fixture: PostgreSQL, started for this module)
from test_gradebook_postgres import _env as pg_env, _gradebook as pg_gradebook, _run as pg_run
from test_gradebook_postgres import _verdicts as pg_cell_outputs

needs_sandbox = pytest.mark.skipif(not AVAILABLE, reason=f"sandbox unavailable: {WHY}")
# The scheduler, two workers and their nannies share this machine's 2 cores with the sandboxes and the judge (on a
# real cluster they have machines of their own): a notebook or a class may take this much longer than its bound.
LOOPBACK_SLOWDOWN = 1.5
DASK = Path(sys.executable).with_name("dask")
STARTUP_SECONDS = 60  # a scheduler or a worker on a loaded 2-core machine
_TLS: dict[str, Path] = {}  # a loopback scheduler's address -> the folder of its course certificates



# --- a Dask cluster on loopback -----------------------------------------------------------------------------


class Loopback:
    """`dask scheduler` and `dask worker`s on 127.0.0.1, each in its own process group, logs in ``folder``."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.processes: dict[str, subprocess.Popen] = {}
        self.client = None
        self.scheduler_file = folder / "scheduler.json"
        self.tls = cluster.make_certificates(folder / "tls")  # the course's CA and certificates, as an instructor would

    def start(self) -> "Loopback":
        self._start("scheduler", [str(DASK), "scheduler", "--protocol", "tls", "--host", "127.0.0.1", "--port", "0",
                                  "--no-dashboard", "--scheduler-file", str(self.scheduler_file),
                                  *cluster.tls_arguments(self.tls, "scheduler")])
        deadline = time.monotonic() + STARTUP_SECONDS
        while not self.scheduler_file.exists():
            assert time.monotonic() < deadline and self.processes["scheduler"].poll() is None, self.log("scheduler")
            time.sleep(0.2)
        time.sleep(0.2)  # (written at once, but be sure the file is whole)
        self.address = json.loads(self.scheduler_file.read_text())["address"]
        assert self.address.startswith("tls://"), self.address
        _TLS[self.address] = self.tls
        from distributed import Client

        self.client = Client(self.address, security=cluster.cluster_security(self.tls, "client"), set_as_default=False)
        return self

    def _start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        log = open(self.folder / f"{name}.log", "w")
        process = subprocess.Popen(argv, cwd=self.folder, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env={**os.environ, **(env or {})}, start_new_session=True)
        log.close()
        self.processes[name] = process
        return process

    def log(self, name: str, whole: bool = False) -> str:
        """The process's log: its last 3,000 characters (for a failure message), or all of it."""
        text = (self.folder / f"{name}.log").read_text(errors="replace")
        return text if whole else text[-3000:]

    def start_worker(self, name: str, env: dict[str, str] | None = None, tls: list[str] | None = None,
                     extra: tuple[str, ...] = ()) -> subprocess.Popen:
        """Start `dask worker` (one thread, with its nanny), with the course's worker certificate unless ``tls``."""
        tls = cluster.tls_arguments(self.tls, "worker") if tls is None else tls
        return self._start(name, [str(DASK), "worker", self.address, "--name", name, "--nthreads", "1", "--host",
                                  "127.0.0.1", "--no-dashboard", "--local-directory", str(self.folder / name), *tls,
                                  *extra], env)

    def add_worker(self, name: str, env: dict[str, str] | None = None) -> str:
        """Start a worker with the course's certificate; its address once the scheduler knows it."""
        before = set(self.workers())
        self.start_worker(name, env)
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            new = {a for a, info in self.workers().items() if info.get("name") == name} - before
            if new:
                return new.pop()
            assert time.monotonic() < deadline and self.processes[name].poll() is None, self.log(name)
            time.sleep(0.2)

    def workers(self) -> dict[str, dict]:
        return self.client.scheduler_info(n_workers=-1)["workers"]

    def kill(self, name: str) -> None:
        """SIGKILL the worker's process group (nanny and worker): a machine that vanishes."""
        process = self.processes.pop(name)
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=30)

    def stop(self, name: str) -> None:
        process = self.processes.pop(name)
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
        except ProcessLookupError:
            pass

    def close(self) -> None:
        try:
            if self.client is not None:
                self.client.close()
        finally:
            for name in [n for n in self.processes if n != "scheduler"] + ["scheduler"]:
                if name in self.processes:
                    self.stop(name)


@pytest.fixture(scope="module")
def loopback():
    """A scheduler and two workers (`w1`, `w2`), for every test of this module; stopped whatever happens."""
    folder = Path(tempfile.mkdtemp(prefix="dask-loopback-"))
    cluster_ = Loopback(folder)
    try:
        cluster_.start()
        for name in ("w1", "w2"):
            cluster_.add_worker(name)
        yield cluster_
    finally:
        cluster_.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("cluster")


@pytest.fixture(scope="module")
def template(released_template):
    return released_template  # (conftest's, made once for the session: grade_class and _demo_course copy it)


def _on(address: str) -> dict[str, str]:
    """nbgrader's environment, grading on the Dask scheduler at ``address`` (with its cluster's certificates)."""
    return {**course.nbgrader_env(), cluster.ENV: address,
            **({cluster.TLS_ENV: str(_TLS[address])} if address in _TLS else {})}


# --- the adversarial corpus, through Dask -------------------------------------------------------------------


_GRADED: dict[str, GradedClass] = {}


@pytest.fixture(scope="module")
def classroom(loopback, workdir, template):
    """test_adversarial's classroom, with nbgrader grading on the loopback Dask cluster."""

    def get(klass: str) -> GradedClass:
        if klass not in _GRADED:
            saved = {name: os.environ.get(name) for name in (cluster.ENV, cluster.TLS_ENV)}
            os.environ[cluster.ENV] = loopback.address  # course.nbgrader_env() passes them on to nbgrader
            os.environ[cluster.TLS_ENV] = str(loopback.tls)
            try:
                _GRADED[klass] = grade_class(klass, workdir / "adversarial", template, LOOPBACK_SLOWDOWN,
                                             dask_students(klass))
            finally:
                for name, value in saved.items():
                    if value is None:
                        os.environ.pop(name, None)
                    else:
                        os.environ[name] = value
            assert f"grading on the Dask cluster at {loopback.address}: 2 workers" in _GRADED[klass].log, (
                "the class was not graded on the Dask workers:\n" + _GRADED[klass].log[-3000:])
        return _GRADED[klass]

    (workdir / "adversarial").mkdir(exist_ok=True)
    yield get
    _GRADED.clear()




@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize("klass,case", STUDENTS, ids=[_ids(s) for s in STUDENTS])
def test_each_student_gets_the_points_its_code_deserves(classroom, klass, case, request):
    local_corpus.test_each_student_gets_the_points_its_code_deserves(classroom, klass, case, request)


@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize("klass,case,check", AFTER, ids=[f"{k}/{c.student}/{a[0]}" for k, c, a in AFTER])
def test_after_grading(classroom, klass, case, check):
    local_corpus.test_after_grading(classroom, klass, case, check)


@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize("klass,case", FLAGGED, ids=[_ids(s) for s in FLAGGED])
def test_flagged_students_are_flagged_and_controls_never(classroom, klass, case):
    local_corpus.test_flagged_students_are_flagged_and_controls_never(classroom, klass, case)


def test_the_classes_and_students_left_out_of_the_dask_run_exist_and_the_rest_is_graded_on_dask():
    assert set(NOT_ON_DASK) <= set(local_corpus.CLASSES), "a class left out of the Dask run no longer exists"
    assert set(CLASSES) == set(local_corpus.CLASSES) - set(NOT_ON_DASK) and len(CLASSES) >= 4
    assert {klass for klass, _ in STUDENTS} == set(CLASSES)
    main = {case.student for case in students_of("main")}
    assert set(MAIN_ON_DASK) <= main, f"named in MAIN_ON_DASK, not in the main class: {set(MAIN_ON_DASK) - main}"
    assert len([case for klass, case in STUDENTS if klass == "main"]) == len(MAIN_ON_DASK)


@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize("klass,case", STUDENTS, ids=[_ids(s) for s in STUDENTS])
def test_each_student_costs_at_most_its_bound_on_dask(classroom, klass, case):
    graded = classroom(klass)
    times = {nb: s for (student, nb), s in graded.notebook_seconds.items() if student == case.student}
    assert times, f"no grading time logged for {case.student}"
    bound = case.bound * LOOPBACK_SLOWDOWN
    assert all(s <= bound for s in times.values()), f"{case.student} took {times} (bound {bound:g} s on loopback)"


@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize("klass", CLASSES)
def test_the_class_is_graded_on_dask_in_time_without_errors_and_submissions_unchanged(classroom, klass):
    graded = classroom(klass)
    bound = sum(case.bound for case in dask_students(klass)) * LOOPBACK_SLOWDOWN
    assert not graded.killed, f"nbgrader autograde did not finish in time ({bound:g} s and a little); it was killed"
    assert graded.seconds <= bound, f"grading took {graded.seconds:.0f} s, more than the sum of the bounds ({bound:g} s)"
    errors = [line for line in graded.log.splitlines() if "ERROR" in line]
    assert graded.returncode == 0 and not errors, f"nbgrader exit code {graded.returncode}:\n" + "\n".join(errors[:20])
    assert set(graded.scores) == {case.student for case in dask_students(klass)}
    assert graded.submitted_after == graded.submitted_before, "submitted notebooks changed during grading"


# --- the demo class: Dask against the local pool ------------------------------------------------------------


def _demo_course(root: Path, template: Path) -> int:
    """The bundled example class (examples/students.toml) in a copy of the template course; its notebook count."""
    shutil.copytree(template, root, symlinks=True)
    students = course.class_answers(course.REPO / "examples" / "students.toml",
                                    course.answer_sources(course.REPO / "solutions" / course.ASSIGNMENT),
                                    course.REPO / "examples" / "mistakes")
    for student, answers in students.items():
        course.build_submission(root / "release" / course.ASSIGNMENT, answers,
                                root / "submitted" / student / course.ASSIGNMENT)
    return sum(1 for _ in (root / "submitted").glob(f"*/{course.ASSIGNMENT}/*.ipynb"))


def _verdicts(root: Path) -> dict[str, dict]:
    """'student/notebook' -> the saved verdicts (scores, messages, diagnoses), without the timings."""
    found = {}
    for path in sorted((root / "grader_results" / course.ASSIGNMENT).glob("*/*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        data.pop("seconds", None)
        found[f"{path.parent.name}/{path.stem}"] = data
    return found


def _graded_lines(log: str) -> list[str]:
    return re.findall(rf"(\S+/{course.ASSIGNMENT}/\S+): [\d.]+/[\d.]+ points \(trusted grading", log)


@pytest.mark.slow
@needs_sandbox
def test_the_demo_class_by_three_processes_on_dask_into_postgresql_gets_the_local_pools_gradebook(
        loopback, workdir, template, demo_run, postgres_url):
    """The scale-out docs/cluster.md gives a big class (`make autograde JOBS=N DB_URL=postgresql+psycopg://...` with
    GRADER_SCHEDULER set): 3 nbgrader processes over disjoint students, their notebooks graded on the Dask workers,
    one PostgreSQL gradebook (issue 10, parts 1 and 2, together). Every student x notebook x cell gets the score, the
    comment and the verdict that one process on the local pool wrote to SQLite (conftest's demo_run), each notebook is
    graded once, and the score table, the class report, feedback and `nbgrader export` read the PostgreSQL gradebook."""
    demo, code, single = demo_run  # the demo class graded by the local pool (`python -m grader.classroom.course demo`, shared)
    assert code == 0, single[-3000:]
    one, many = workdir / "demo-local", workdir / "demo-dask-postgres"
    shutil.copytree(demo / "course", one, symlinks=True)  # (a copy: the report below writes into the course)
    total = _demo_course(many, template)
    students = sorted(path.name for path in (many / "submitted").iterdir())
    assert total == sum(1 for _ in (one / "submitted").glob(f"*/{course.ASSIGNMENT}/*.ipynb"))
    (many / "gradebook.db").unlink()  # the PostgreSQL database starts empty: autograde puts the assignment in it

    env = {**pg_env(GRADER_DB_URL=postgres_url), cluster.ENV: loopback.address, cluster.TLS_ENV: str(loopback.tls)}
    started = time.monotonic()
    shared = pg_run([sys.executable, "-m", "grader.classroom.course", "autograde", "--root", str(many), "--jobs", str(JOBS)], env)
    print(f"demo class, {total} notebooks: {JOBS} processes on loopback Dask, PostgreSQL, "
          f"{time.monotonic() - started:.1f} s")
    assert f"{JOBS} nbgrader processes record them" in shared and "given the assignment" in shared, shared
    assert f"{total}/{total} notebooks graded" in shared, shared
    graded_by, lines = {}, []
    for number in range(1, JOBS + 1):
        log = (many / f"nbgrader-job{number}.log").read_text()
        assert "(exit status 0" in log and "ERROR" not in log, log[-3000:]
        assert f"grading on the Dask cluster at {loopback.address}: 2 workers" in log, log[-3000:]
        graded_by[f"job {number}"] = {line.split("/", 1)[0] for line in _graded_lines(log)}
        lines += _graded_lines(log)
    assert all(graded_by.values()), graded_by
    assert sorted(s for graded in graded_by.values() for s in graded) == students, f"one process each: {graded_by}"
    assert sorted(lines) == sorted(set(lines)) and len(lines) == total, "each notebook graded once"
    assert not (many / "gradebook.db").exists(), "no SQLite gradebook on the side"

    # the same gradebook, cell by cell; the same saved verdicts; the same outputs in the autograded notebooks
    expected, got = pg_gradebook(f"sqlite:///{one / 'gradebook.db'}"), pg_gradebook(postgres_url)
    assert {key[0] for key in expected} == set(students)
    assert got == expected, {k: (expected.get(k), got.get(k)) for k in set(expected) | set(got)
                             if expected.get(k) != got.get(k)}
    saved = _verdicts(many)
    assert saved == _verdicts(one) and len(saved) == total
    assert pg_cell_outputs(many) == pg_cell_outputs(one)
    assert {s: {e: got for e, (got, _) in row.items()} for s, row in
            course.gradebook_scores(postgres_url).items()} == expected_scores()

    # the score table, the class report, feedback and nbgrader export read the PostgreSQL gradebook
    table = [line for line in shared.splitlines() if line.split(" ", 1)[0] in students]
    assert table == [line for line in single.splitlines() if line.split(" ", 1)[0] in students]
    assert len(table) == len(students)
    scores = pg_run([sys.executable, "-m", "grader.classroom.course", "scores", "--root", str(many)], env)
    assert [line for line in scores.splitlines() if line.split(" ", 1)[0] in students] == table
    pg_run([sys.executable, "-m", "grader.classroom.report", "--root", str(many), "--assignment", course.ASSIGNMENT], env)
    pg_run([sys.executable, "-m", "grader.classroom.report", "--root", str(one), "--assignment", course.ASSIGNMENT], pg_env())
    assert (many / "reports" / "scores.csv").read_text() == (one / "reports" / "scores.csv").read_text()
    assert (many / "reports" / "diagnoses.csv").read_text() == (one / "reports" / "diagnoses.csv").read_text()
    pg_run(course.nbgrader_command("generate_feedback", course.ASSIGNMENT, f"--CourseDirectory.root={many}",
                                   "--student", students[0]), env)  # (one student's pages: the gradebook is read)
    pages = sorted(p.relative_to(many / "feedback") for p in (many / "feedback").glob("*/*/*.html"))
    assert len(pages) == total // len(students) and all(str(p).startswith(students[0]) for p in pages), pages
    pg_run(course.nbgrader_command("export", f"--CourseDirectory.root={many}",
                                   f"--CsvExportPlugin.to={many / 'grades.csv'}"), env)
    with open(many / "grades.csv", newline="") as f:
        exported = {row["student_id"]: float(row["score"]) for row in csv.DictReader(f)}
    assert exported == {s: sum(v[0] for k, v in expected.items() if k[0] == s) for s in students}


@pytest.mark.slow
@needs_sandbox
def test_a_worker_killed_in_the_middle_of_a_class_costs_no_student_anything(loopback, workdir, template):
    """A third worker joins, takes notebooks, and is SIGKILLed (nanny and all) while running one. `make autograde`
    (grader.classroom.course) says in the terminal that the class is graded on Dask (which workers it saw) and gives each
    notebook run again a line: the student's notebook, the worker lost, the worker that ran it again (issue 21)."""
    root = workdir / "demo-killed"
    total = _demo_course(root, template)
    doomed = loopback.add_worker("w3")
    terminal = workdir / "demo-killed.out"
    with open(terminal, "w") as out:
        nbgrader = subprocess.Popen([sys.executable, "-m", "grader.classroom.course", "autograde", "--root", str(root)],
                                    cwd=course.REPO, env=_on(loopback.address), stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    killed_while: list[str] = []
    try:
        deadline = time.monotonic() + 300
        while not killed_while and nbgrader.poll() is None and time.monotonic() < deadline:
            if loopback.client.processing().get(doomed):  # (asked of all: never of a worker the scheduler forgot)
                time.sleep(0.2)  # inside the notebook, not at its first instruction
                still = list(loopback.client.processing().get(doomed, []))
                if still:  # a short notebook may have ended meanwhile: then wait for the next one
                    loopback.kill("w3")
                    killed_while = still
            time.sleep(0.05)
        assert killed_while, "the third worker was never holding a notebook when polled: nothing was killed"
        nbgrader.wait(timeout=600)
    finally:
        if nbgrader.poll() is None:
            os.killpg(nbgrader.pid, signal.SIGKILL)
            nbgrader.wait()
        if "w3" in loopback.processes:
            loopback.kill("w3")
    text = _read(root / course.LOG_NAME)
    said = _read(terminal)
    assert nbgrader.returncode == 0 and "ERROR" not in text, said + text[-3000:]
    assert f"grading on the Dask cluster at {loopback.address}: 3 workers" in text, text[-3000:]
    dask_lines = [line for line in said.splitlines() if "grading on the Dask cluster at" in line]
    assert len(dask_lines) == 1 and f"{loopback.address}: 3 workers, 3 threads" in dask_lines[0], said
    retried = [line for line in said.splitlines() if "was lost while running it" in line]
    assert len(retried) == len(killed_while), said
    for line in retried:
        assert re.match(rf"\s*warning: [^/\s]+/{course.ASSIGNMENT}/\w+: the Dask worker {re.escape(doomed)} was "
                        r"lost while running it; run again on tls://127\.0\.0\.1:\d+ \(nothing charged\)", line), line
        assert doomed not in line.rsplit("run again on", 1)[1], line
    scores = course.gradebook_scores(f"sqlite:///{root / 'gradebook.db'}")
    assert {s: {e: got for e, (got, _) in row.items()} for s, row in scores.items()} == expected_scores()
    graded = _graded_lines(text)
    assert len(graded) == total and len(set(graded)) == total, f"recorded {len(graded)} times for {total} notebooks"
    verdicts = _verdicts(root)
    assert len(verdicts) == total
    died = sandbox.Outcome(None, "", 0, "worker").reason
    charged = [name for name, data in verdicts.items() if died in json.dumps(data) or data.get("problem")]
    assert not charged, f"charged to students for the killed worker: {charged}"
    assert doomed not in loopback.workers()

    def times_started(keys: list[str], dask_scheduler=None) -> dict[str, int]:  # (nested: pickled by value)
        story = dask_scheduler.story(*keys)
        return {key: sum(1 for t in story if t[0] == key and t[2] == "processing") for key in keys}

    started = loopback.client.run_on_scheduler(times_started, killed_while)  # from the scheduler's transition log
    assert all(n >= 2 for n in started.values()), f"a notebook killed with its worker was not run again: {started}"


@pytest.mark.slow
@needs_sandbox
def test_a_scheduler_lost_in_the_middle_of_a_class_stops_grading_and_charges_nobody(workdir, template):
    """A cluster of its own (the module's stays up): its scheduler is SIGKILLed once nbgrader has recorded a
    student. Autograde stops with one line; what was recorded before is right; nobody is charged."""
    root = workdir / "demo-scheduler-lost"
    _demo_course(root, template)
    per_student = len(list((course.REPO / "solutions" / course.ASSIGNMENT).glob("*.ipynb")))  # 5 since notebook 6 (the labs)
    folder = Path(tempfile.mkdtemp(prefix="dask-lost-"))
    own = Loopback(folder)
    try:
        own.start()
        own.add_worker("w1")
        env = {**_on(own.address), "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "3s"}
        with open(folder / "autograde.out", "w") as out:
            autograde = subprocess.Popen([sys.executable, "-m", "grader.classroom.course", "autograde", "--root", str(root)],
                                        cwd=course.REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.monotonic() + 300
            while len(_graded_lines(_read(root / course.LOG_NAME))) < per_student:  # a first student's worth
                assert autograde.poll() is None and time.monotonic() < deadline, _read(folder / "autograde.out")
                time.sleep(0.2)
            own.client.close()
            own.kill("scheduler")
            killed = time.monotonic()
            autograde.wait(timeout=300)
            stopped_after = time.monotonic() - killed
        finally:
            if autograde.poll() is None:
                os.killpg(autograde.pid, signal.SIGKILL)
                autograde.wait()
        out = _read(folder / "autograde.out")
    finally:
        if own.client is not None:
            own.client.close()
        for name in list(own.processes):
            own.kill(name)
        shutil.rmtree(folder, ignore_errors=True)
    assert autograde.returncode != 0, out
    errors = [line for line in out.splitlines() if line.strip().startswith("error:")]
    assert len(errors) == 1 and f"lost the connection to the Dask scheduler at {own.address}" in errors[0], out
    assert stopped_after < 60, f"autograde took {stopped_after:.0f} s to stop after the scheduler was lost"
    log = _read(root / course.LOG_NAME)
    recorded = _graded_lines(log)
    assert recorded and len(recorded) == len(set(recorded)), log[-3000:]
    verdicts = _verdicts(root)
    charged = {name: data["problem"] for name, data in verdicts.items() if data.get("problem")}
    assert not charged, f"charged to students for the lost scheduler: {charged}"
    expected = expected_scores()
    scores = course.gradebook_scores(f"sqlite:///{root / 'gradebook.db'}")
    finished = {name.split("/")[0] for name in recorded
                if sum(r.startswith(name.split("/")[0] + "/") for r in recorded) == per_student}
    assert finished, f"no student was finished before the scheduler was lost: {recorded}"
    for student in finished:
        assert {e: got for e, (got, _) in scores[student].items()} == expected[student], student


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


# What a tester did on the old code: a worker with a modified grader that forges the fingerprint the worker used to
# check itself with (the digest the grading process sent it), and the one its sandboxes report to its pool, so that
# every check made on the worker passes.
FORGE = """
from grader.isolation import pool as _pool, sandbox as _sandbox
_sandbox._IMPORTED_FINGERPRINT = {fingerprint!r}
_read = _pool._Worker._read


def _forged_read(self, timeout):
    answer = _read(self, timeout)
    if isinstance(answer, dict) and "fingerprint" in answer:
        answer["fingerprint"] = self.pool.fingerprint
    return answer


_pool._Worker._read = _forged_read
"""


def _other_grader(copy: Path, forge: bool) -> None:
    shutil.copytree(course.REPO / "grader", copy / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    with open(copy / "grader" / "checks.py", "a") as f:
        f.write("\n# one more line: another version of the grader\n")
    if forge:
        with open(copy / "grader" / "isolation" / "cluster.py", "a") as f:  # the real module (grader/isolation/cluster.py only names it)
            f.write(FORGE.format(fingerprint=sandbox.package_fingerprint()))


@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize("forge", [False, True], ids=["another-version", "forged-fingerprint"])
def test_a_worker_running_another_grader_package_stops_grading_before_anything_is_recorded(loopback, workdir,
                                                                                          template, forge):
    copy = Path(tempfile.mkdtemp(prefix="other-grader-"))
    copy.chmod(0o755)  # its sandboxes can start: only the grading process's own check can refuse it
    root = workdir / f"demo-mismatch-{forge}"
    try:
        _other_grader(copy, forge)
        address = loopback.add_worker("w-other", env={"PYTHONPATH": str(copy)})
        _demo_course(root, template)
        done = subprocess.run([sys.executable, "-m", "grader.classroom.course", "autograde", "--root", str(root)],
                              cwd=course.REPO, env=_on(loopback.address), capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=600)
    finally:
        if "w-other" in loopback.processes:
            loopback.stop("w-other")
        shutil.rmtree(copy, ignore_errors=True)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    errors = [line for line in out.splitlines() if line.strip().startswith("error:")]
    assert len(errors) == 1, out
    assert address in errors[0] and "different grader package" in errors[0] and "restart" in errors[0], errors[0]
    assert "nothing was recorded" in errors[0], errors[0]
    assert course.gradebook_scores(f"sqlite:///{root / 'gradebook.db'}") == {}
    assert not (root / "grader_results").exists()


@pytest.mark.slow
def test_a_worker_without_the_courses_certificate_cannot_join_and_gets_no_task(loopback, tmp_path):
    """A worker started without a certificate, and one with a certificate of another CA (a course of its own): the
    scheduler refuses both, so neither is ever a worker of the cluster (no task, no student's code)."""
    foreign = cluster.make_certificates(tmp_path / "foreign")
    started = {"w-no-cert": loopback.start_worker("w-no-cert", tls=[], extra=("--death-timeout", "15")),
               "w-foreign": loopback.start_worker("w-foreign", tls=cluster.tls_arguments(foreign, "worker"),
                                                  extra=("--death-timeout", "15"))}
    joined: set[str] = set()
    try:
        deadline = time.monotonic() + 90
        while any(p.poll() is None for p in started.values()) and time.monotonic() < deadline:
            joined |= {info.get("name") for info in loopback.workers().values()} & set(started)
            time.sleep(0.3)
        still = [name for name, p in started.items() if p.poll() is None]
    finally:
        for name in started:
            loopback.stop(name)
    assert not joined, f"joined the cluster without the course's certificate: {joined}"
    assert not still, f"still trying after 90 s: {still}"
    assert all(p.returncode != 0 for p in started.values()), {n: p.returncode for n, p in started.items()}
    # (the whole log: Dask's refusal is the first exception of a chain; under load the "Nanny failed to start"
    # traceback after it is longer than the tail a failure message shows)
    foreign_log = loopback.log("w-foreign", whole=True)
    assert any(word in foreign_log.lower() for word in ("certificate", "ssl", "security settings")), foreign_log[-3000:]
    assert set(loopback.workers()) and not ({i.get("name") for i in loopback.workers().values()} & set(started))


# A certified worker turned hostile (it kept a copy of the right sources, so it answers the challenge): its task
# answers a pickle whose unpickling writes a marker named after the process that unpickles it.
HOSTILE = """
import threading as _threading
from pathlib import Path as _Path

_KEY = _package_key(_Path({original!r}))  # the challenge answered as the real package would


class _Bomb:
    def __reduce__(self):
        return (os.system, ("touch {marker}/unpickled-by-$PPID",))


async def _setup(self, worker):  # no sandboxes: answers at once
    self.address, self.pool, self.problem, self.closed = worker.address, object(), "", False
    self.ready = _threading.Event()
    self.ready.set()


SandboxPlugin.setup = _setup
SandboxPlugin.teardown = lambda self, worker: None


def run_plan(plugin, plan, timeout, nonce):
    return _Bomb()
"""


@pytest.mark.slow
def test_a_certified_workers_pickled_answer_runs_nothing_here_and_only_that_notebook_fails(tmp_path):
    """A cluster of its own (only the hostile worker, so it gets every task): the grading process (this one) gets
    each notebook reported as not graded, nothing of the answers is unpickled here, and grading goes on."""
    copy, marker = tmp_path / "hostile", tmp_path / "markers"
    marker.mkdir()
    shutil.copytree(course.REPO / "grader", copy / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    with open(copy / "grader" / "isolation" / "cluster.py", "a") as f:  # the real module (grader/isolation/cluster.py only names it)
        f.write(HOSTILE.format(original=str(course.REPO / "grader"), marker=marker))
    folder = Path(tempfile.mkdtemp(prefix="dask-hostile-"))
    own = Loopback(folder)
    try:
        own.start()
        own.add_worker("w-hostile", env={"PYTHONPATH": str(copy)})
        with cluster.DaskPool(hide=[], scheduler=own.address, certificates=own.tls) as pool:
            answers = [pool.run_plan([{"kind": "code", "index": 0, "source": source}], 10) for source in ("x = 1", "x = 2")]
    finally:
        own.close()
        shutil.rmtree(folder, ignore_errors=True)
    here = marker / f"unpickled-by-{os.getpid()}"
    assert not here.exists(), "a worker's pickle ran code in the grading process"
    assert answers == [(b"", local.TaskOutcome(None, "worker"))] * 2
    from grader.judge import runner

    reported, problem, _, _ = runner._read_results(*answers[0][:1], {0: 0}, [],
                                                   sandbox.Outcome(None, "", 0.0, "worker", sandbox.Limits()))
    assert reported == {} and problem, "the notebook must be reported as not graded, with a reason"


@pytest.mark.slow
def test_an_unreachable_scheduler_is_one_clear_line_and_nothing_is_recorded(workdir, template):
    root = workdir / "demo-unreachable"
    _demo_course(root, template)
    address = f"tls://127.0.0.1:{_closed_port()}"
    env = {**_on(address), cluster.TLS_ENV: str(cluster.make_certificates(workdir / "unreachable-tls")),
           "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "3s"}
    done = subprocess.run([sys.executable, "-m", "grader.classroom.course", "autograde", "--root", str(root)], cwd=course.REPO,
                          env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    errors = [line for line in out.splitlines() if line.strip().startswith("error:")]
    assert len(errors) == 1, out
    assert f"cannot reach the Dask scheduler at {address}" in errors[0] and "dask scheduler" in errors[0], errors[0]
    assert "nothing was recorded" in errors[0], errors[0]
    # ... and nothing after it reads as if grading had happened (issue 21): no count, no table, no second failure
    for misleading in ("notebooks graded", "--force", "student ", "failed for some students", "No autograded"):
        assert misleading not in out, f"{misleading!r} after the error:\n{out}"
    assert course.gradebook_scores(f"sqlite:///{root / 'gradebook.db'}") == {}


def _closed_port() -> int:
    import socket

    with socket.socket() as s:  # a port just freed: nobody listens there
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the client's side, without a cluster (fast) -----------------------------------------------------------


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    return cluster.make_certificates(tmp_path_factory.mktemp("certs") / "tls")


def test_an_unreachable_scheduler_is_a_setup_error_naming_it(monkeypatch, certificates):
    monkeypatch.setenv("DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT", "1s")
    import dask

    dask.config.refresh()
    address = f"tls://127.0.0.1:{_closed_port()}"
    try:
        with pytest.raises(sandbox.SetupError, match=f"cannot reach the Dask scheduler at {re.escape(address)}"):
            cluster.DaskPool(hide=[], scheduler=address, certificates=certificates)
    finally:
        monkeypatch.delenv("DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT")
        dask.config.refresh()


@pytest.mark.parametrize("address", ["nonsense", "tcp://host-without-port", "inproc://x"])
def test_a_malformed_scheduler_address_is_a_setup_error_saying_how_to_write_it(address):
    with pytest.raises(sandbox.SetupError, match="is not a Dask scheduler's address .*write it as tls://host:8786"):
        cluster.DaskPool(hide=[], scheduler=address)


def test_the_scheduler_setting_comes_first_then_the_environment(monkeypatch):
    from grader.classroom.nbgrader_plugins import TrustedExecute

    monkeypatch.delenv(cluster.ENV, raising=False)
    assert TrustedExecute().scheduler_address() == ""
    monkeypatch.setenv(cluster.ENV, "tcp://from-env:8786")
    assert TrustedExecute().scheduler_address() == "tcp://from-env:8786"
    assert TrustedExecute(scheduler="tcp://configured:8786").scheduler_address() == "tcp://configured:8786"
    assert cluster.scheduler_address("") == "tcp://from-env:8786"


class _Future:
    """Stands for a distributed Future that is already done (with a result, or with the error it raises)."""

    def __init__(self, outcome):
        self.outcome = outcome

    def add_done_callback(self, fn):
        fn(self)

    def result(self, timeout=None):
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome

    def release(self):
        pass


class _Client:
    """Stands for distributed.Client: each submit's future ends with the next outcome."""

    status = "running"

    def __init__(self, outcomes):
        self.outcomes = list(outcomes)
        self.submitted = []

    def submit(self, function, *args, pure=True):
        assert pure is False, "two students may hand in the same plan: each is a task of its own"
        self.submitted.append(args)
        outcome = self.outcomes.pop(0)
        return _Future(outcome(args[-1]) if callable(outcome) else outcome)  # (an answer made for the task's nonce)

    def nthreads(self):
        return {"tcp://127.0.0.1:1": 1}


def _pool_over(client) -> cluster.DaskPool:
    import threading

    pool = cluster.DaskPool.__new__(cluster.DaskPool)
    pool.client, pool.address, pool.name = client, "tcp://127.0.0.1:1", "grader-sandboxes-test"
    pool._threads_seen, pool._seen_at, pool._seen_lock = 0, 0.0, threading.Lock()
    pool.log, pool._lost, pool._lost_lock = cluster.log, {}, threading.Lock()
    return pool


def _answer(results: str = '{"event": "done"}\n', returncode=0, stopped="", proof=None, **more):
    """What run_plan on an honest worker sends back for a task's nonce (``proof``: a forger's instead)."""
    def made(nonce: str) -> bytes:
        text = json.dumps({"results": results, "returncode": returncode, "stopped": stopped,
                           "worker": "tls://127.0.0.1:2", **more})
        return json.dumps({"answer": text, "proof": proof or cluster.prove(nonce, text.encode())}).encode()
    return made


def test_a_notebook_whose_workers_died_is_submitted_again_not_charged():
    from distributed.scheduler import KilledWorker

    client = _Client([KilledWorker("run_plan-1", None, 3), _answer()])
    assert _pool_over(client).run_plan([{"kind": "code"}], 10) == (b'{"event": "done"}\n', local.TaskOutcome(0, ""))
    assert len(client.submitted) == 2
    assert client.submitted[0][-1] != client.submitted[1][-1], "each task must have a fresh nonce"


def test_workers_dying_again_and_again_stop_grading_as_a_setup_problem():
    from distributed.scheduler import KilledWorker

    client = _Client([KilledWorker("run_plan-1", None, 3)] * (cluster.RESUBMIT + 1))
    with pytest.raises(sandbox.SetupError, match="Dask workers kept dying.*not charged"):
        _pool_over(client).run_plan([{"kind": "code"}], 10)


def test_an_error_on_a_worker_is_a_setup_problem_never_a_score():
    client = _Client([ModuleNotFoundError("No module named 'grader'")])
    with pytest.raises(sandbox.SetupError, match=r"grading on the Dask cluster at .* failed \(ModuleNotFoundError"):
        _pool_over(client).run_plan([{"kind": "code"}], 10)


class _RacyFuture:
    """A distributed Future as a loaded machine showed it (dask/distributed#8514): done, but ``result`` called with a
    timeout raises UnboundLocalError from inside distributed's sync(); without a timeout it returns the result."""

    def __init__(self, value, done_after: float = 0.0):
        self.value, self.callbacks = value, []
        self.finish_at = time.monotonic() + done_after

    def add_done_callback(self, fn):
        import threading

        def later():
            time.sleep(max(0.0, self.finish_at - time.monotonic()))
            fn(self)
        threading.Thread(target=later, daemon=True).start()

    def result(self, timeout=None):
        if timeout is not None:
            raise UnboundLocalError("cannot access local variable 'result' where it is not associated with a value")
        return self.value


def test_a_result_is_fetched_without_the_timeout_that_races_inside_distributed(monkeypatch):
    """Polling future.result(timeout=...) once stopped a whole class under load: distributed raised UnboundLocalError
    (its own race, dask/distributed#8514) and the pool took it for a broken cluster. The pool waits for the future to
    be done, watching the cluster meanwhile, and fetches the result once, without a timeout."""
    pool = object.__new__(cluster.DaskPool)
    pool.address = "tcp://127.0.0.1:1"
    watched = []
    monkeypatch.setattr(pool, "_watch", lambda alone_since: watched.append(alone_since))
    monkeypatch.setattr(cluster, "POLL_SECONDS", 0.05)
    assert pool._result(_RacyFuture(b"results", done_after=0.3)) == b"results"
    assert watched, "the cluster was not watched while the notebook ran"


# --- a worker's answer: plain data, with the proof of the grader package (fast) --------------------------------


_UNGRADED = (b"", local.TaskOutcome(None, "worker"))  # the notebook is reported as not graded (its checks fail)


@pytest.mark.parametrize("answer", [
    ("not bytes", local.TaskOutcome(0, "")),  # what the old task returned: a Python object, unpickled here
    b"\x80\x04\x95pickle",
    b"[]",
    json.dumps({"answer": "{}", "proof": 3}).encode(),
    _answer(results=["a list"]),
    _answer(stopped="memory; rm -rf /"),
    _answer(returncode="1"),
    b"x" * (cluster.ANSWER_BYTES + 1),
], ids=["object", "pickle-bytes", "json-list", "bad-proof-type", "results-not-text", "unknown-outcome",
        "returncode-text", "too-large"])
def test_an_answer_that_is_not_plain_results_fails_that_notebook_and_the_class_goes_on(answer):
    client = _Client([answer, _answer()])
    pool = _pool_over(client)
    assert pool.run_plan([{"kind": "code"}], 10) == _UNGRADED
    assert pool.run_plan([{"kind": "code"}], 10) == (b'{"event": "done"}\n', local.TaskOutcome(0, ""))


def test_an_answer_refused_by_dasks_deserializers_fails_that_notebook():
    refused = TypeError("Data serialized with pickle but only able to deserialize data with ['msgpack']")
    assert _pool_over(_Client([refused])).run_plan([{"kind": "code"}], 10) == _UNGRADED


def test_an_answer_without_the_proof_of_this_grader_package_stops_grading_naming_the_worker():
    forged = _answer(proof="0" * 64)  # a worker that cannot compute HMAC(its sources' digest, the nonce)
    with pytest.raises(sandbox.SetupError, match=r"tls://127.0.0.1:2 answered a notebook without proving it runs "
                                                 r"the grading process's grader package.*restart its `dask worker`"):
        _pool_over(_Client([forged])).run_plan([{"kind": "code"}], 10)
    replayed = _answer()("another task's nonce")  # a proof is good for one task only
    with pytest.raises(sandbox.SetupError, match="without proving"):
        _pool_over(_Client([replayed])).run_plan([{"kind": "code"}], 10)


def test_the_proof_depends_on_the_grader_sources(tmp_path):
    shutil.copytree(course.REPO / "grader", tmp_path / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    assert cluster._package_key(tmp_path / "grader") == cluster._KEY
    with open(tmp_path / "grader" / "checks.py", "a") as f:
        f.write("\n# one more line\n")
    assert cluster._package_key(tmp_path / "grader") != cluster._KEY


class _BombError(Exception):
    """An exception whose unpickling runs a command (writes ``MARKER``), as a hostile worker could raise."""

    MARKER = Path(tempfile.gettempdir()) / f"grader-bomb-{os.getpid()}"

    def __reduce__(self):
        return (os.system, (f"touch {self.MARKER}",))


def test_a_failed_tasks_exception_is_read_without_running_what_it_carries():
    import pickle

    from distributed.core import error_message
    from distributed.scheduler import KilledWorker

    _BombError.MARKER.unlink(missing_ok=True)
    bomb = pickle.dumps(_BombError("boom"))  # a hostile worker's "exception" (Dask's clean_exception unpickles it)
    try:
        _, read, tb = cluster._restricted_exception(bomb, bomb)
        assert not _BombError.MARKER.exists(), "unpickling a worker's exception ran its command in the grading process"
    finally:
        _BombError.MARKER.unlink(missing_ok=True)
    assert isinstance(read, cluster._Unreadable) and tb is None
    # what Dask itself sends still reads: the scheduler's KilledWorker (resubmitted), a worker's plain error
    _, killed, _ = cluster._restricted_exception(pickle.dumps(KilledWorker("run_plan-1", None, 3)))
    assert isinstance(killed, KilledWorker)
    try:
        raise ValueError("plain")
    except ValueError as exc:
        message = error_message(exc)
    _, plain, _ = cluster._restricted_exception(message["exception"].data, message["traceback"].data)
    assert isinstance(plain, ValueError) and str(plain) == "plain"
    # the type of a task's result, which a worker reports and the client unpickles when the task is done
    assert cluster._restricted_loads(pickle.dumps(bytes)) is bytes
    assert isinstance(cluster._restricted_loads(pickle.dumps(_BombError("boom"))), cluster._Unreadable)
    assert not _BombError.MARKER.exists()


def test_a_failed_tasks_unreadable_exception_fails_that_notebook():
    unreadable = cluster._Unreadable("an error from the cluster that was not unpickled")
    assert _pool_over(_Client([unreadable, _answer()])).run_plan([{"kind": "code"}], 10) == _UNGRADED


# --- TLS: the grading process talks only to an authenticated cluster (fast) ----------------------------------


def test_a_scheduler_without_tls_is_refused_saying_what_to_do(certificates):
    with pytest.raises(sandbox.SetupError, match=r"refusing to grade on the Dask scheduler at tcp://127.0.0.1:8786.*"
                                                 r"not a tls:// address.*python -m grader.isolation.cluster certificates"):
        cluster.DaskPool(hide=[], scheduler="tcp://127.0.0.1:8786", certificates=certificates)


def test_without_the_courses_certificates_grading_says_how_to_make_them(tmp_path):
    with pytest.raises(sandbox.SetupError, match=r"cluster certificates are missing .*client.pem.*"
                                                 r"python -m grader.isolation.cluster certificates"):
        cluster.DaskPool(hide=[], scheduler="tls://127.0.0.1:8786", certificates=tmp_path / "none")


def test_the_certificates_are_private_files_signed_by_the_courses_ca(tmp_path):
    from cryptography import x509

    done = subprocess.run([sys.executable, "-m", "grader.isolation.cluster", "certificates", "--folder", str(tmp_path / "tls"),
                           "--host", "grading-host"], cwd=course.REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "tls://grading-host:8786" in done.stdout and "--tls-cert" in done.stdout
    folder = tmp_path / "tls"
    assert folder.stat().st_mode & 0o777 == 0o700
    names = {p.name: p.stat().st_mode & 0o777 for p in folder.iterdir()}
    assert names == {f"{n}{k}.pem": 0o600 for n in ("ca", "scheduler", "worker", "client") for k in ("", "-key")}
    ca = x509.load_pem_x509_certificate((folder / "ca.pem").read_bytes())
    for role in cluster.ROLES:
        x509.load_pem_x509_certificate((folder / f"{role}.pem").read_bytes()).verify_directly_issued_by(ca)
    again = subprocess.run([sys.executable, "-m", "grader.isolation.cluster", "certificates", "--folder", str(folder)],
                           cwd=course.REPO, capture_output=True, text=True, timeout=60)
    assert again.returncode == 1 and "--force" in again.stderr, "an existing CA must not be replaced silently"
