"""A pool of sandboxed workers with torch imported, one per core, grading notebooks concurrently.

Each worker runs ``grader.worker`` under bubblewrap: course folders, the repository, /root and /home
hidden; no network; its own pid namespace and cgroup; a private /tmp of bounded size and no writable host
folder at all. The plan goes in through the worker's stdin and the results come back through its stdout,
so no notebook ever sees another's files. A worker forks a fresh child per notebook, so a notebook costs
its own work, not a Python start and a torch import. Judging happens in the caller's thread.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import sandbox

_ids = itertools.count()
SCRATCH_BYTES = 512 * 2**20  # each worker's private /tmp


@dataclass
class TaskOutcome:
    returncode: int | None
    stopped: str  # "", "timeout", "output", "worker"


class _Worker:
    def __init__(self, pool: "Pool"):
        self.pool = pool
        self.cgroups = sandbox._Cgroups(sandbox.Limits(memory_bytes=pool.limits.memory_bytes + SCRATCH_BYTES + 2**30,
                                                       processes=pool.limits.processes))
        env = {"OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg", "GRADER_NO_DRAW": "1", "PATH": "/usr/bin:/bin",
               "LANG": "C.UTF-8", "HOME": "/tmp"}
        argv = [sys.executable, "-I", "-m", "grader.worker"]
        command = self.cgroups.join_command() + sandbox.command(argv, None, pool.hide, pool.expose, env,
                                                                 tmp_bytes=SCRATCH_BYTES)
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True, bufsize=1, start_new_session=True)
        self.ready: bool | None = None  # known once its first line arrives (torch import: about a second)

    def wait_ready(self) -> "_Worker":
        if self.ready is None:
            self.ready = self._read(timeout=120) is not None
        return self

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

    def run(self, plan: list[dict[str, Any]], timeout: float) -> tuple[bytes, TaskOutcome]:
        task_id = f"t{next(_ids)}"
        task = {"id": task_id, "plan": plan, "timeout": timeout, "memory": self.pool.limits.memory_bytes,
                "file_bytes": self.pool.limits.file_bytes}
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps(task) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            return b"", TaskOutcome(None, "worker")
        answer = self._read(timeout + 30)  # the worker enforces the timeout; this guards a silent worker
        if answer is None or answer.get("id") != task_id:
            self.close()
            return b"", TaskOutcome(None, "worker")
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
    """``with Pool(hide=[course_root]) as pool: pool.run(plan, timeout)`` from any number of threads."""

    def __init__(self, hide: list[Path], workers: int | None = None, limits: sandbox.Limits = sandbox.Limits()):
        ok, why = sandbox.available()
        if not ok:
            raise sandbox.SandboxUnavailable(why)
        self.limits = limits
        self.hide = sandbox.default_hidden(hide)
        self.expose = sandbox.default_exposed()
        self.size = workers or os.cpu_count() or 1
        # bwrap --die-with-parent ties a worker to the *thread* that started it: one long-lived thread does.
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="grader-pool-spawner")
        self.idle: "queue.Queue[_Worker]" = queue.Queue()
        for worker in [self._spawn() for _ in range(self.size)]:  # all start at once, then become ready
            self.idle.put(worker.wait_ready())

    def _spawn(self) -> _Worker:
        return self._spawner.submit(_Worker, self).result()

    def run(self, plan: list[dict[str, Any]], timeout: float) -> tuple[bytes, TaskOutcome]:
        """Run one notebook's plan; return (the child's results, how it ended)."""
        worker = self.idle.get()
        if not worker.alive():
            worker.close()
            worker = self._spawn().wait_ready()
        try:
            return worker.run(plan, timeout)
        finally:
            if worker.alive():
                self.idle.put(worker)
            else:
                worker.close()
                self.idle.put(self._spawn().wait_ready())

    def close(self) -> None:
        while not self.idle.empty():
            self.idle.get().close()
        self._spawner.shutdown()

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
