"""A long-lived grading worker: lives inside bubblewrap with torch imported, forks one child per notebook.

    python -m grader.worker        (started by grader.pool, never by hand)

Protocol, one JSON object per line: the pool sends {"id", "dir", "timeout", "memory"}; the worker forks a
child that runs ``grader.child`` on dir/plan.json, writing dir/results.jsonl, and answers
{"id", "returncode", "stopped"} once the child is gone. Before answering it kills every process the child
left behind (the worker's pid namespace holds nothing else), so the next notebook starts clean. The
worker is not dumpable, so a child cannot read or write its memory.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread per child: the pool runs one child per core

import IPython.core.interactiveshell  # noqa: E402,F401  (preloaded: every child would pay for it)
import torch  # noqa: E402

from . import child  # noqa: E402

PR_SET_DUMPABLE = 4


def _not_dumpable() -> None:
    try:
        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _virtual_memory() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _kill_leftovers() -> None:
    """SIGKILL every process in this pid namespace except its init (1) and this worker."""
    me = os.getpid()
    for _ in range(3):
        others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me)]
        if not others:
            return
        for pid in others:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in others:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        time.sleep(0.01)


def _run_child(task: dict, base_memory: int) -> int:
    pid = os.fork()
    if pid == 0:  # the child: a fresh process with torch already imported
        try:
            os.setsid()
            folder = task["dir"]
            os.chdir(folder)
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            os.closerange(3, 1024)
            limit = base_memory + int(task["memory"])
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            resource.setrlimit(resource.RLIMIT_FSIZE, (int(task.get("file_bytes", 64 * 2**20)),) * 2)
            torch.set_num_threads(1)
            child.main(os.path.join(folder, "plan.json"), os.path.join(folder, "results.jsonl"))
            os._exit(0)
        except BaseException:
            os._exit(1)
    return pid


def main() -> None:
    _not_dumpable()
    base_memory = _virtual_memory()
    out = sys.stdout
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        task = json.loads(line)
        started = time.monotonic()
        pid = _run_child(task, base_memory)
        stopped, status = "", 0
        deadline = started + float(task["timeout"])
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                stopped = "timeout"
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                _, status = os.waitpid(pid, 0)
                break
            time.sleep(0.005)
        _kill_leftovers()
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        if code == -signal.SIGXFSZ:
            stopped = "output"
        out.write(json.dumps({"id": task["id"], "returncode": code, "stopped": stopped,
                              "seconds": time.monotonic() - started}) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
