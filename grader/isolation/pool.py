"""A pool of sandboxed workers with torch imported, one per core, grading notebooks concurrently.

Each worker runs ``grader.sandboxed.worker`` as the init of its own bubblewrap sandbox (``grader.isolation.sandbox``): the
course, the repository, /root and /home are not there; no network; an unprivileged host user; a seccomp
filter; its own pid namespace and cgroup; a private /tmp of bounded size and no writable host folder. It
runs exactly the grader package this process imported (mounted at ``sandbox.TRUSTED_GRADER``; the worker's
first answer carries a digest of its sources, which must equal ours). The plan goes in through the
worker's stdin and the results come back through its stdout, so no notebook ever sees another's files.

Failures are charged to whoever caused them:
- a worker that never becomes ready is a broken setup (``sandbox.SetupError``): grading stops, says why,
  and records nothing;
- a worker that finds itself unfit before a notebook (something an earlier notebook left) or dies before
  taking it is replaced, and the notebook is graded on the fresh one: not charged;
- a worker that dies while grading a notebook is replaced and the notebook graded once more; only if it
  dies again is it charged to that notebook ("the grading worker running it died").
"""

from __future__ import annotations

import atexit
import collections
import contextvars
import json
import os
import queue
import secrets
import subprocess
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.boundary import channel
from grader.isolation import sandbox, syscalls

SCRATCH_BYTES = 512 * 2**20  # each worker's private /tmp
READY_SECONDS = 120  # torch's import and the warm-up take about 2 s; a loaded machine may need much more
# The worker's start-up imports (torch, torch._dynamo, sympy, pyplot) make half a million objects that live as long as
# the worker: collecting among them as they came took a fifth of its start. The worker's warm-up freezes them and
# turns collection back on, before any child forks.
BOOT = ("import gc; gc.disable(); import sys; sys.path.insert(0, {path!r}); from grader.sandboxed.worker import main; main()")


# 'student/assignment/notebook' while the judge runs it (grader.judge.runner.grade_cells sets it in its thread): read by
# a pool reporting on that run (a Dask worker lost while running it)
GRADING: contextvars.ContextVar[str] = contextvars.ContextVar("grading", default="")


@dataclass
class TaskOutcome:
    returncode: int | None
    stopped: str  # "", "timeout", "output", "worker", "channel"


class _Unfit(Exception):
    """The worker could not take the notebook (unfit, or gone before it started): retry elsewhere, uncharged.
    ``flags``: what the notebook was flagged for before that (kept: a flagged notebook stays flagged)."""

    def __init__(self, why: str, flags: bytes = b"") -> None:
        super().__init__(why)
        self.flags = flags


class _Worker:
    def __init__(self, pool: "Pool"):
        self.pool = pool
        self.cgroups = sandbox._Cgroups(sandbox.Limits(memory_bytes=pool.limits.memory_bytes + SCRATCH_BYTES + 2**30,
                                                       processes=pool.limits.processes))
        # one thread per process: the seccomp filter refuses threads (grader.sandboxed.worker pins torch's setters too)
        env = {"OMP_NUM_THREADS": "1", "OMP_THREAD_LIMIT": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
               "MPLBACKEND": "module://matplotlib_inline.backend_inline", "GRADER_SANDBOXED": "1",
               "PATH": "/usr/bin:/bin",
               "LANG": "C.UTF-8", "HOME": "/tmp", "GRADER_FONT_LISTS": str(sandbox.FONT_LISTS)}
        argv = [sys.executable, "-I", "-c", BOOT.format(path=sandbox.TRUSTED_GRADER)]
        policy = syscalls.descriptor()
        try:
            command = self.cgroups.join_command() + sandbox.command(
                argv, None, pool.hide, pool.expose, env, tmp_bytes=SCRATCH_BYTES, seccomp_fd=policy, as_pid_1=True)
            self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, text=True, bufsize=1, start_new_session=True,
                                            pass_fds=(policy,), **sandbox._popen_identity())  # type: ignore[arg-type]
        finally:
            os.close(policy)
        self.stderr: collections.deque[str] = collections.deque(maxlen=20)
        self._stderr_drained = threading.Thread(target=self._drain_stderr, daemon=True)
        self._stderr_drained.start()
        self.ready: bool | None = None  # known once its first line arrives (torch import: about a second)
        self.problem = ""

    def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line.rstrip())

    def wait_ready(self) -> "_Worker":
        if self.ready is None:
            answer = self._read(timeout=READY_SECONDS)
            if answer is None or not answer.get("ready"):
                self.ready = False
                self.problem = self._why_not_ready()
            elif answer.get("fingerprint") != self.pool.fingerprint:
                self.ready = False
                self.problem = (f"the sandbox imported a different grader package ({answer.get('package')}, "
                                f"digest {answer.get('fingerprint')}) than this process "
                                f"({sandbox.trusted_package()}, digest {self.pool.fingerprint})")
            else:
                self.ready = True
        return self

    def _why_not_ready(self) -> str:
        try:  # its stdout closed: it is exiting, so wait a moment for the status rather than say "silent"
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        if code is not None:  # what it said before exiting: read to the end (on a loaded machine the reader lags)
            self._stderr_drained.join(timeout=5)
        said = " | ".join(line for line in list(self.stderr)[-6:] if line.strip())
        state = f"exited with status {code}" if code is not None else f"said nothing within {READY_SECONDS} s"
        return f"the sandboxed grading worker {state}" + (f": {said}" if said else "")

    def _read(self, timeout: float) -> dict[str, Any] | None:
        """The worker's next answer, or None if it died or stayed silent past ``timeout``."""
        answer: list[Any] = []

        def read() -> None:
            assert self.process.stdout is not None
            line = self.process.stdout.readline()
            try:
                answer.append(json.loads(line) if line else None)
            except json.JSONDecodeError:
                answer.append(None)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(timeout)
        return answer[0] if answer and isinstance(answer[0], dict) else None

    def run_plan(self, plan: list[dict[str, Any]], timeout: float) -> tuple[bytes, TaskOutcome]:
        task_id = secrets.token_hex(16)  # unguessable: an answer for any other task is not this one's
        held, checks = channel.split_plan(plan)  # the checks go only once the child is forked (worker's docstring)
        task = {"id": task_id, "plan": held, "timeout": timeout, "memory": self.pool.limits.memory_bytes,
                "file_bytes": self.pool.limits.file_bytes}
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps(task) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise _Unfit("the worker was gone before the notebook started") from None
        # The worker enforces the timeout; this guards a silent worker. Before its answer, it hands on each flag as it
        # arrives ({"id", "flags"}): a notebook that then takes its worker down stays flagged.
        deadline, flags = time.monotonic() + timeout + 30, []
        while True:
            answer = self._read(max(0.0, deadline - time.monotonic()))
            if answer is not None and answer.get("id") == task_id and answer.get("forked") is True:
                try:
                    self.process.stdin.write(json.dumps({"id": task_id, "checks": list(checks.items())}) + "\n")
                    self.process.stdin.flush()
                except (BrokenPipeError, OSError):
                    pass  # the worker is gone: its silence is read next
                continue
            if answer is None or answer.get("id") != task_id or "flags" not in answer:
                break
            flags += [line for line in answer["flags"] if isinstance(line, str)] if isinstance(answer["flags"], list) else []
        told = "\n".join(flags).encode("utf-8", errors="replace")
        if answer is not None and answer.get("id") == task_id and "unhealthy" in answer:
            raise _Unfit(str(answer["unhealthy"]), told)
        if answer is None or answer.get("id") != task_id:
            self.close()
            return told, TaskOutcome(None, "worker")
        results = answer.get("results", "")
        return (results.encode("utf-8", errors="replace") if isinstance(results, str) else b"",
                TaskOutcome(int(answer.get("returncode", 1)), str(answer.get("stopped", ""))))

    def alive(self) -> bool:
        return bool(self.wait_ready().ready) and self.process.poll() is None

    def close(self) -> None:
        sandbox._kill(self.process)
        self.process.wait()
        self.cgroups.remove()


class Pool:
    """``with Pool(hide=[course_root]) as pool: pool.run_plan(plan, timeout)`` from any number of threads.

    ``at_once``: how many workers start together (default: all); the others start once those are ready. On a
    machine where nbgrader's own process starts beside the pool, starting one worker fewer than the cores keeps
    the first notebook from waiting on workers that share one core with it (``beside_nbgrader()``).

    ``on_demand``: the others start only once the notebooks announced with ``expect()`` and not yet begun would keep
    the ready workers busy for longer than a worker takes to start (measured on the first ones): a class of one
    student is graded by the first worker alone, instead of sharing the cores with a warm-up (torch, torch._dynamo,
    pyplot: seconds of CPU) that would be ready only after its last notebook.

    Raises ``sandbox.SetupError`` (naming the cause) when a worker cannot start: nothing can be graded."""

    RETRIES = 3  # fresh workers tried for one notebook when the failure is not the notebook's

    def __init__(self, hide: list[Path], workers: int | None = None, limits: sandbox.Limits = sandbox.Limits(),
                 at_once: int | None = None, on_demand: bool = False):
        ok, why = sandbox.available()
        if not ok:
            raise sandbox.SandboxUnavailable(why)
        self.limits = limits
        self.hide = sandbox.default_hidden(hide)
        self.expose = sandbox.default_exposed()
        self.fingerprint = sandbox.package_fingerprint()
        self.size = workers or os.cpu_count() or 1
        threading.Thread(target=sandbox.prepare_font_lists, name="grader-font-lists", daemon=True).start()
        # bwrap --die-with-parent ties a worker to the *thread* that started it: one long-lived thread does.
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="grader-pool-spawner")
        self.idle: "queue.Queue[_Worker]" = queue.Queue()
        self._closed, self._lock = False, threading.Lock()
        self._starting: list[_Worker] = []  # started after the first ones, not ready yet
        self.late_problem = ""  # why a worker started later could not start (the pool grades on with fewer)
        self._demand = threading.Condition()
        self._expected = 0  # notebooks announced (expect()) and not begun yet
        self._seconds: list[float] = []  # how long each notebook took in run_plan()
        self._waiting = 0  # notebooks in run_plan() waiting for a worker
        self._running: list[float] = []  # when each notebook on a worker now began (time.monotonic())
        first = min(self.size, at_once or self.size)
        spawned = time.monotonic()
        started = [self._spawn() for _ in range(first)]  # these start at once, then become ready
        broken = [w for w in started if not w.wait_ready().ready]
        if broken:
            for worker in started:
                worker.close()
            self._spawner.shutdown()
            raise sandbox.SetupError(f"cannot grade: {broken[0].problem}. Nothing was graded or recorded. "
                                     "Check that `make install` completed, then try again.")
        self.start_seconds = time.monotonic() - spawned  # what one more worker will take, about
        for worker in started:
            self.idle.put(worker)
        self._later = None
        if first < self.size:
            self._later = threading.Thread(target=self._start_later, args=(first, self.size - first, on_demand), daemon=True,
                                           name="grader-pool-later")
            self._later.start()

    def expect(self, notebooks: int = 1) -> None:
        """Announce notebooks that will be run (negative: announced ones that will not be, e.g. cancelled)."""
        with self._demand:
            self._expected = max(0, self._expected + notebooks)
            self._demand.notify_all()

    def _worth_more_workers(self, ready: int) -> bool:
        """Whether the notebooks announced would keep ``ready`` workers busy longer than a new worker takes to start,
        at the mean time of the notebooks finished so far; before any has finished, only if they would at a second
        apiece twice over (one student's four notebooks, about 1.5 s of work, started a second worker whose warm-up
        took the cores from them and ended after the last one; the first notebook's time settles it a moment later).
        Or a notebook already waits for a worker while every one has been on its notebook longer than a start: one
        that runs to its time limit (an endless loop) must not keep the next student waiting with a core idle."""
        if self._seconds:
            if self._expected * sum(self._seconds) / len(self._seconds) > self.start_seconds * ready:
                return True
        elif self._expected * 1.0 > 2 * self.start_seconds * ready:
            return True
        now = time.monotonic()
        return (self._waiting > 0 and len(self._running) >= ready
                and all(now - began > self.start_seconds for began in self._running))

    def _start_later(self, ready: int, count: int, on_demand: bool) -> None:
        """The ``count`` workers beyond the ``ready`` first ones, all at once (``on_demand``: once the class needs
        them); each joins the idle ones when ready."""
        if on_demand:
            with self._demand:
                while not self._closed and not self._worth_more_workers(ready):
                    self._demand.wait(0.5)
        with self._lock:
            if self._closed:
                return
            try:
                starting = [self._spawn() for _ in range(count)]
            except RuntimeError:  # the spawner was shut down: the pool is closing
                return
            self._starting.extend(starting)
        for worker in starting:
            ready = worker.wait_ready().ready
            with self._lock:
                self._starting.remove(worker)
                if ready and not self._closed:
                    self.idle.put(worker)
                    continue
                if not self._closed:
                    self.late_problem = worker.problem
            worker.close()

    def _spawn(self) -> _Worker:
        return self._spawner.submit(_Worker, self).result()

    def _fresh(self) -> _Worker:
        worker = self._spawn().wait_ready()
        if not worker.ready:
            worker.close()
            raise sandbox.SetupError(f"cannot grade: {worker.problem}")
        return worker

    def run_plan(self, plan: list[dict[str, Any]], timeout: float) -> tuple[bytes, TaskOutcome]:
        """Run one notebook's plan; return (the child's results, how it ended)."""
        self.expect(-1)
        with self._demand:
            self._waiting += 1
        try:
            worker = self.idle.get()
        finally:
            with self._demand:
                self._waiting -= 1
        began = time.monotonic()
        with self._demand:
            self._running.append(began)
        died = 0
        carried = b""  # flags of attempts that ended without an answer: they come first in the results
        try:
            for _ in range(self.RETRIES + 1):
                if not worker.alive():
                    worker.close()
                    worker = self._fresh()
                try:
                    data, ended = worker.run_plan(plan, timeout)
                except _Unfit as unfit:
                    carried += unfit.flags + b"\n" if unfit.flags else b""
                    worker.close()
                    worker = self._fresh()
                    continue
                if ended.stopped == "worker" and died == 0:  # maybe not this notebook's doing: once more
                    carried += data + b"\n" if data else b""
                    died += 1
                    worker.close()
                    worker = self._fresh()
                    continue
                return carried + data, ended
            return carried, TaskOutcome(None, "worker")
        finally:
            if not (worker.process.poll() is None and worker.ready):
                worker.close()
                try:
                    worker = self._fresh()
                except Exception:  # SetupError, or no new thread at interpreter exit: never lose the slot
                    pass  # the dead worker goes back: the next run_plan() tries to replace it again, and says why
            self.idle.put(worker)
            with self._demand:
                self._running.remove(began)
                self._seconds = [*self._seconds[-49:], time.monotonic() - began]
                self._demand.notify_all()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            starting = list(self._starting)
        with self._demand:  # a later start still waiting for demand gives up
            self._demand.notify_all()
        for worker in starting:  # killed: its wait_ready() returns at once, and the starter closes it
            sandbox._kill(worker.process)
        if self._later is not None:
            self._later.join()
        while not self.idle.empty():
            self.idle.get().close()
        self._spawner.shutdown()

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def beside_nbgrader() -> int:
    """How many workers start at once when nbgrader's own process starts on the same cores: one per core but
    the one nbgrader's start-up (imports, the gradebook) keeps busy for its first seconds."""
    return max(1, (os.cpu_count() or 1) - 1)


def as_nbgrader_starts_it() -> dict[str, Any]:
    """How a pool beside nbgrader's process starts (the early one, or the one nbgrader starts itself when run
    directly): ``beside_nbgrader()`` workers at once, the others once the class needs them (``on_demand``)."""
    return {"at_once": beside_nbgrader(), "on_demand": True}


# --- a pool started early -------------------------------------------------------------------------------------
# `python -m grader.classroom.nbgrader_job` starts the pool first thing, in a thread: the workers import torch in their
# sandboxes while nbgrader's process imports nbgrader. TrustedExecute then takes it (``take_early``) when its
# configuration asks for that same pool; otherwise it is closed and the configured one is started.

_early: tuple[tuple[tuple[str, ...], int | None], "Future[Pool]"] | None = None
EARLY_TIMES: dict[str, float] = {}  # time.monotonic() when the early pool was started, was ready, was taken
_early_lock = threading.Lock()


def _early_key(hide: list[Path], workers: int | None) -> tuple[tuple[str, ...], int | None]:
    return tuple(sorted(str(Path(p).resolve()) for p in hide)), (workers or None)


def start_early(hide: list[Path], workers: int | None = None) -> None:
    """Start ``Pool(hide, workers)`` in the background, for ``take_early`` to hand over; nothing when the sandbox
    cannot start here (the one asking for a pool then says why)."""
    global _early
    if not sandbox.available()[0]:
        return
    starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="grader-early-pool")
    EARLY_TIMES["started"] = time.monotonic()

    def start() -> Pool:
        pool = Pool(hide=hide, workers=workers, **as_nbgrader_starts_it())
        EARLY_TIMES["ready"] = time.monotonic()
        return pool

    with _early_lock:
        _early = (_early_key(hide, workers), starter.submit(start))
    starter.shutdown(wait=False)
    atexit.register(discard_early, wait=True)  # never taken (nbgrader stopped before grading): close it


def take_early(hide: list[Path], workers: int | None) -> "Pool | None":
    """The pool ``start_early`` started with these arguments, once it is ready (raises ``sandbox.SetupError`` as
    ``Pool`` does); None when none was started with them."""
    global _early
    with _early_lock:
        if _early is None or _early[0] != _early_key(hide, workers):
            return None
        future, _early = _early[1], None
    EARLY_TIMES["taken"] = time.monotonic()
    return future.result()


def discard_early(wait: bool = False) -> None:
    """Close the pool started early and not taken, once it is up (its workers' cgroups are removed); with
    ``wait``, before returning."""
    global _early
    with _early_lock:
        early, _early = _early, None
    if early is None:
        return
    if wait:
        if early[1].exception() is None:
            early[1].result().close()
    else:
        early[1].add_done_callback(lambda f: f.exception() is None and f.result().close())
