"""A pool of sandboxed workers with torch imported, one per core, grading notebooks concurrently.

Each worker runs ``grader.worker`` under bubblewrap (course folders hidden, no network, its own pid
namespace and cgroup) and forks a fresh child per notebook, so a notebook costs its own work, not a
Python start and a torch import. The pool hands out one notebook per idle worker; results are written
by the child into a task folder this side reads, so even a worker killed mid-notebook loses nothing
already reported. A dead worker is replaced. Judging happens in the caller's thread (``grader.runner``).
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import sandbox

_ids = itertools.count()


@dataclass
class TaskOutcome:
    returncode: int | None
    stopped: str  # "", "timeout", "output", "worker"


class _Worker:
    def __init__(self, pool: "Pool"):
        self.pool = pool
        # Its own folder: a child sees only the notebook it grades, never another worker's task.
        self.dir = Path(tempfile.mkdtemp(prefix="w-", dir=pool.workdir))
        os.chmod(self.dir, 0o777)
        self.cgroups = sandbox._Cgroups(sandbox.Limits(memory_bytes=pool.limits.memory_bytes + 2**30,
                                                       processes=pool.limits.processes))
        env = {"OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg", "PYTHONWARNINGS": "ignore", "GRADER_NO_DRAW": "1",
               "PYTHONNOUSERSITE": "1"}
        argv = [sys.executable, "-m", "grader.worker"]
        command = self.cgroups.join_command() + sandbox.command(argv, self.dir, pool.hide, pool.expose, env)
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        text=True, bufsize=1, start_new_session=True)
        self.ready = self._read() is not None

    def _read(self) -> dict[str, Any] | None:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            return None
        try:
            answer = json.loads(line)
        except json.JSONDecodeError:
            return None
        return answer if isinstance(answer, dict) else None

    def run(self, folder: Path, timeout: float) -> TaskOutcome:
        task_id = f"t{next(_ids)}"
        task = {"id": task_id, "dir": str(folder), "timeout": timeout, "memory": self.pool.limits.memory_bytes,
                "file_bytes": self.pool.limits.file_bytes}
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps(task) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            return TaskOutcome(None, "worker")
        # The worker enforces the timeout itself; this guards against a worker that stopped answering.
        answer: list[dict[str, Any] | None] = []
        reader = threading.Thread(target=lambda: answer.append(self._read()), daemon=True)
        reader.start()
        reader.join(timeout + 30)
        if not answer or answer[0] is None or answer[0].get("id") != task_id:
            self.close()
            return TaskOutcome(None, "worker")
        return TaskOutcome(int(answer[0].get("returncode", 1)), str(answer[0].get("stopped", "")))

    def alive(self) -> bool:
        return self.ready and self.process.poll() is None

    def close(self) -> None:
        sandbox._kill(self.process)
        self.process.wait()
        self.cgroups.remove()
        shutil.rmtree(self.dir, ignore_errors=True)


class Pool:
    """``with Pool(hide=[course_root]) as pool: pool.run(plan)`` from any number of threads."""

    def __init__(self, hide: list[Path], workers: int | None = None, limits: sandbox.Limits = sandbox.Limits()):
        ok, why = sandbox.available()
        if not ok:
            raise sandbox.SandboxUnavailable(why)
        self.limits = limits
        self.workdir = Path(tempfile.mkdtemp(prefix="grader-pool-"))
        os.chmod(self.workdir, 0o777)
        self.hide = list(hide)
        self.expose = [Path(sys.prefix), Path(__file__).resolve().parent]
        self.size = workers or os.cpu_count() or 1
        self.idle: "queue.Queue[_Worker]" = queue.Queue()
        starters = [threading.Thread(target=lambda: self.idle.put(_Worker(self))) for _ in range(self.size)]
        for t in starters:
            t.start()
        for t in starters:
            t.join()

    def run(self, plan: list[dict[str, Any]], timeout: float) -> tuple[bytes, TaskOutcome]:
        """Run one notebook's plan; return (the child's results file, how it ended)."""
        worker = self.idle.get()
        if not worker.alive():
            worker.close()
            worker = _Worker(self)
        folder = Path(tempfile.mkdtemp(prefix="nb-", dir=worker.dir))
        try:
            os.chmod(folder, 0o777)
            (folder / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
            outcome = worker.run(folder, timeout)
            results = folder / "results.jsonl"
            data = results.read_bytes()[:50_000_000] if results.exists() else b""
            return data, outcome
        finally:
            shutil.rmtree(folder, ignore_errors=True)
            if worker.alive():
                self.idle.put(worker)
            else:
                worker.close()
                self.idle.put(_Worker(self))

    def close(self) -> None:
        while not self.idle.empty():
            self.idle.get().close()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
