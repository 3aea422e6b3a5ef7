"""How the pool of sandboxed workers starts beside nbgrader (issue 10, fixed costs).

`python -m grader.classroom.nbgrader_job` starts the pool while nbgrader's own process starts on the same cores. Starting
every worker at once made the first notebook wait for workers that shared a core with nbgrader's start-up; now
``at_once`` workers start first, grading begins as soon as they are ready, and the others join when ready.
These tests hold the pool to that, and to what must not change: no worker is lost or leaked, whatever happens.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from grader.isolation import pool as pools
from grader.isolation import sandbox

AVAILABLE, WHY = sandbox.available()
needs_sandbox = pytest.mark.skipif(not AVAILABLE, reason=f"sandbox unavailable: {WHY}")

PRINT_PID = [{"kind": "code", "index": 0, "source": "import os; print(os.getpid())", "restricted": False}]


@pytest.fixture
def hidden():
    folder = Path(tempfile.mkdtemp(prefix="pool-start-hidden-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _bwraps_of_this_process() -> set[int]:
    """bubblewrap processes whose parent is this process (each pool worker's sandbox)."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and name == "bwrap":
            found.add(int(entry))
    return found


def test_nbgraders_pool_starts_one_worker_fewer_than_the_cores_at_once():
    assert pools.beside_nbgrader() == max(1, (os.cpu_count() or 1) - 1)


@needs_sandbox
@pytest.mark.slow
def test_grading_starts_on_the_first_worker_and_the_others_join_when_ready(hidden):
    before = _bwraps_of_this_process()
    with pools.Pool(hide=[hidden], workers=2, at_once=1) as pool:
        assert pool.size == 2
        assert pool.idle.qsize() == 1, "the pool waited for more workers than it was asked to start at once"
        data, outcome = pool.run_plan(PRINT_PID, 30)  # graded now, while the second worker starts
        assert outcome.returncode == 0 and outcome.stopped == "", (data, outcome)
        deadline = time.monotonic() + pools.READY_SECONDS
        while pool.idle.qsize() < 2:
            assert time.monotonic() < deadline, "the second worker never joined"
            time.sleep(0.1)
        assert not pool.late_problem
        assert len(_bwraps_of_this_process() - before) == 2
        # both workers grade: two notebooks held at once each take one
        first, second = pool.idle.get(), pool.idle.get()
        assert first.process.pid != second.process.pid and first.alive() and second.alive()
        pool.idle.put(first)
        pool.idle.put(second)
    assert not (_bwraps_of_this_process() - before), "a worker outlived its pool"


@needs_sandbox
@pytest.mark.slow
def test_a_pool_closed_while_its_later_workers_start_leaves_no_sandbox_behind(hidden):
    before = _bwraps_of_this_process()
    started = time.monotonic()
    pool = pools.Pool(hide=[hidden], workers=3, at_once=1)
    pool.close()  # the two later workers are starting (importing torch) now
    assert time.monotonic() - started < pools.READY_SECONDS / 2, "close() waited for the later workers' warm-up"
    deadline = time.monotonic() + 10
    while _bwraps_of_this_process() - before:
        assert time.monotonic() < deadline, f"sandboxes left: {_bwraps_of_this_process() - before}"
        time.sleep(0.1)
    assert pool.idle.empty()


@needs_sandbox
@pytest.mark.slow
def test_a_later_worker_that_cannot_start_is_said_and_the_class_is_graded_by_the_others(hidden, monkeypatch):
    real = pools._Worker.wait_ready
    calls = []

    def second_never_ready(self):
        calls.append(self)
        if len(calls) >= 2 and self.ready is None:  # the worker started later: it dies in its warm-up
            sandbox._kill(self.process)
        return real(self)

    monkeypatch.setattr(pools._Worker, "wait_ready", second_never_ready)
    with pools.Pool(hide=[hidden], workers=2, at_once=1) as pool:
        deadline = time.monotonic() + 60
        while not pool.late_problem:
            assert time.monotonic() < deadline, "the later worker's failure was never reported"
            time.sleep(0.1)
        assert "grading worker" in pool.late_problem
        data, outcome = pool.run_plan(PRINT_PID, 30)
        assert outcome.returncode == 0, (data, outcome)
        assert pool.idle.qsize() == 1


@needs_sandbox
@pytest.mark.slow
def test_on_demand_the_later_workers_start_only_when_the_waiting_notebooks_outlast_their_start(hidden):
    """nbgrader's pool (``on_demand``): a class of a few notebooks is graded by the first worker alone, since a
    second one would share the cores with its warm-up and be ready only after the last notebook; once notebooks
    enough to keep the first one busy for longer than a worker's start are announced, the others start and join."""
    before = _bwraps_of_this_process()
    with pools.Pool(hide=[hidden], workers=2, at_once=1, on_demand=True) as pool:
        assert pool.start_seconds > 0
        pool.expect(2)
        for _ in range(2):
            data, outcome = pool.run_plan(PRINT_PID, 30)
            assert outcome.returncode == 0, (data, outcome)
        time.sleep(1.5)
        assert len(_bwraps_of_this_process() - before) == 1, "a second worker started for a class of two notebooks"
        assert pool.idle.qsize() == 1
        pool.expect(1000)  # a large class is queued
        deadline = time.monotonic() + pools.READY_SECONDS
        while pool.idle.qsize() < 2:
            assert time.monotonic() < deadline, "the second worker never joined"
            time.sleep(0.1)
        assert len(_bwraps_of_this_process() - before) == 2 and not pool.late_problem
    assert not (_bwraps_of_this_process() - before), "a worker outlived its pool"


@needs_sandbox
@pytest.mark.slow
def test_a_pool_closed_while_its_later_workers_wait_for_demand_closes_at_once(hidden):
    before = _bwraps_of_this_process()
    pool = pools.Pool(hide=[hidden], workers=3, at_once=1, on_demand=True)
    started = time.monotonic()
    pool.close()
    assert time.monotonic() - started < 5, "close() waited for demand that never came"
    assert not (_bwraps_of_this_process() - before) and pool.idle.empty()


# --- what a worker's start-up leaves its notebooks ----------------------------------------------------------------


def _report(pool: pools.Pool, body: str) -> dict:
    """Run ``body`` (which fills the dict ``info``) as a one-cell notebook in ``pool``; ``info`` back."""
    from test_sandbox_attacks import _report_code, _reports

    data, outcome = pool.run_plan([{"kind": "code", "index": 0, "source": _report_code(body), "restricted": False}], 60)
    reports = _reports(data)
    assert reports, (data[-2000:], outcome)
    return reports[0]


@needs_sandbox
def test_a_notebooks_garbage_is_collected_as_in_a_kernel(hidden):
    """A worker starts with the garbage collector off (the half-million objects of its imports live as long as it
    does) and freezes what it imported: the notebooks it forks collect their own garbage, automatically, with
    Python's usual thresholds, and never spend time on the worker's objects."""
    body = """
    import gc, weakref
    class Node: pass
    runs = []
    gc.callbacks.append(lambda phase, about: phase == "start" and runs.append(about["generation"]))
    first = Node(); first.me = first; alive = weakref.ref(first); del first
    for _ in range(20000):  # cycles nobody collects by hand
        node = Node(); node.me = node
    info.update(enabled=gc.isenabled(), thresholds=list(gc.get_threshold()), automatic=len(runs),
                frozen=gc.get_freeze_count())
    gc.collect()
    info["cycle collected"] = alive() is None
    """
    with pools.Pool(hide=[hidden], workers=1) as pool:
        found = _report(pool, body)
    assert found.get("enabled") is True and found["thresholds"] == [700, 10, 10], found
    assert found["automatic"] > 0, f"no collection ran by itself during the cell: {found}"
    assert found["frozen"] > 100_000, f"the worker's imported objects are not frozen: {found}"
    assert found["cycle collected"] is True, found


@needs_sandbox
def test_a_worker_reads_the_hosts_font_list_instead_of_building_its_own(hidden, monkeypatch):
    """matplotlib's font list is built once on the host (``sandbox.prepare_font_lists``, `make install`) and copied
    into each worker's cache before pyplot's import: a list the host marked is the one the notebooks' matplotlib
    has, so the worker built none (0.2 s of every worker's start)."""
    import json
    import sys

    sandbox.prepare_font_lists()
    real = sorted(sandbox.FONT_LISTS.glob("fontlist-*.json"))
    if not real:
        pytest.skip(f"no font list could be built in {sandbox.FONT_LISTS} (matplotlib missing, or a read-only venv)")
    marked = Path(tempfile.mkdtemp(prefix="font-lists-test-", dir=sandbox.FONT_LISTS.parent))  # inside the venv:
    try:  # exposed, read-only, in every sandbox
        fonts = json.loads(real[0].read_text())
        fonts["ttflist"].append({**fonts["ttflist"][0], "name": "Host Font List Marker"})
        (marked / real[0].name).write_text(json.dumps(fonts))
        marked.chmod(0o755)
        (marked / real[0].name).chmod(0o644)
        assert marked.is_relative_to(Path(sys.prefix))
        monkeypatch.setattr(sandbox, "FONT_LISTS", marked)
        with pools.Pool(hide=[hidden], workers=1) as pool:
            found = _report(pool, "import matplotlib.font_manager as fm\n"
                                  "info['names'] = sorted({f.name for f in fm.fontManager.ttflist})")
    finally:
        shutil.rmtree(marked, ignore_errors=True)
    assert "Host Font List Marker" in found.get("names", []), found
    assert "DejaVu Sans" in found["names"]


def test_the_font_list_is_built_once_readable_by_the_sandbox_user(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "FONT_LISTS", tmp_path / "share" / "matplotlib")
    sandbox.prepare_font_lists()
    built = sorted(sandbox.FONT_LISTS.glob("fontlist-*.json"))
    if not built:
        pytest.skip("matplotlib could not build a font list here")
    assert len(built) == 1 and built[0].stat().st_mode & 0o777 == 0o644
    assert list(sandbox.FONT_LISTS.iterdir()) == built, "the scratch folder it was built in is left behind"
    stamp = built[0].stat().st_mtime_ns
    sandbox.prepare_font_lists()
    assert built[0].stat().st_mtime_ns == stamp, "built again although it was there"


SPAWN_COUNTING_POOL = '''
import os

from grader.isolation.pool import Pool


class SpawnCountingPool(Pool):
    """The course's pool, writing a line each time it starts a sandboxed worker."""

    def _spawn(self):
        with open(os.environ["SPAWNS_FILE"], "a") as f:
            f.write("worker\\n")
        return super()._spawn()
'''


@needs_sandbox
@pytest.mark.slow
def test_nbgrader_run_directly_on_one_notebook_starts_one_worker_not_one_per_core(tmp_path, released_template):
    """`nbgrader autograde` run directly (not through `make autograde`, whose early pool already started this way)
    for a class of one notebook: one sandboxed worker starts, the second only if the class needed it. Old code:
    every core's worker started at once, each paying seconds of warm-up (torch, torch._dynamo, pyplot) for nothing."""
    import subprocess
    import textwrap

    from grader.classroom import course
    from test_adversarial import _solution_cells

    root = tmp_path / "class"
    shutil.copytree(released_template, root, symlinks=True)  # (conftest's, made once: copied)
    submitted = root / "submitted" / "ada" / course.ASSIGNMENT
    course.build_submission(root / "release" / course.ASSIGNMENT, _solution_cells(), submitted)
    for path in submitted.glob("*.ipynb"):
        if path.name != "02_custom_function.ipynb":
            path.unlink()
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "spawn_counting_pool.py").write_text(textwrap.dedent(SPAWN_COUNTING_POOL))
    spawns = tmp_path / "spawns.txt"
    env = {**course.nbgrader_env(), "PYTHONPATH": str(plugins), "SPAWNS_FILE": str(spawns)}
    done = subprocess.run(course.nbgrader_command("autograde", course.ASSIGNMENT, f"--CourseDirectory.root={root}",
                                                  "--CourseDirectory.release_directory=release",
                                                  "--TrustedExecute.pool_class=spawn_counting_pool.SpawnCountingPool"),
                          cwd=course.REPO, env=env, capture_output=True, text=True, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 0 and "ada/autograd/02_custom_function: 6/6 points" in out, out[-4000:]
    assert spawns.read_text().split() == ["worker"], f"workers started for one notebook: {spawns.read_text().split()}"


@needs_sandbox
@pytest.mark.slow
def test_on_demand_a_notebook_waiting_behind_a_long_one_gets_the_next_worker(hidden):
    """A helper's attack on the on-demand pool (26 Nov): in a small class, a notebook that runs to its time limit
    took the only worker, and the next student's notebook (too little demand, by the announced count, for a second
    worker) waited the whole limit with a core idle, charged that time as its own. Now a notebook waiting while every
    worker has been on its notebook longer than a worker takes to start gets the next worker."""
    from concurrent.futures import ThreadPoolExecutor

    long_notebook = [{"kind": "code", "index": 0, "source": "import time\ntime.sleep(12)", "restricted": False}]
    with pools.Pool(hide=[hidden], workers=2, at_once=1, on_demand=True) as pool, ThreadPoolExecutor(1) as thread:
        # (nothing announced with expect(): by the announced count alone, a second worker is never worth starting)
        long = thread.submit(pool.run_plan, long_notebook, 30)
        while pool.idle.qsize():  # the long notebook has the only worker
            time.sleep(0.05)
        started = time.monotonic()
        data, outcome = pool.run_plan(PRINT_PID, 30)
        waited = time.monotonic() - started
        assert outcome.returncode == 0 and outcome.stopped == "", (data, outcome)
        assert not long.done() and waited < 10, f"the short notebook waited {waited:.1f} s behind the long one"
        assert long.result()[1].stopped == ""
