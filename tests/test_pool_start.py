"""How the pool of sandboxed workers starts beside nbgrader (issue 10, fixed costs).

`python -m grader.nbgrader_job` starts the pool while nbgrader's own process starts on the same cores. Starting
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

from grader import pool as pools
from grader import sandbox

AVAILABLE, WHY = sandbox.available()
needs_sandbox = pytest.mark.skipif(not AVAILABLE, reason=f"sandbox unavailable: {WHY}")

PRINT_PID = [{"kind": "code", "index": 0, "source": "import os; print(os.getpid())"}]


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
        data, outcome = pool.run(PRINT_PID, 30)  # graded now, while the second worker starts
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
        data, outcome = pool.run(PRINT_PID, 30)
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
            data, outcome = pool.run(PRINT_PID, 30)
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
