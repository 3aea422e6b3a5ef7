"""A long-lived grading worker: lives inside bubblewrap with torch imported, forks one child per notebook.

    python -I -m grader.worker        (started by grader.pool, never by hand: it refuses outside a sandbox)

Protocol, one JSON object per line. The pool sends {"id", "plan", "timeout", "memory", "file_bytes"}; the
worker forks a child that runs the plan (``grader.child.run``) in a fresh folder of the sandbox's private,
size-limited /tmp, and answers {"id", "returncode", "stopped", "seconds", "results"} once the child is
gone. The results are read through the worker's own descriptor of the file the child writes, so renaming,
replacing or unlinking that path changes nothing. Before answering, the worker kills every process the
child left behind and empties /tmp, so the next notebook starts from nothing its predecessor made. The
worker is not dumpable: a child can neither read nor write its memory.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import shutil
import signal
import sys
import time
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread per child: the pool runs one child per core

import IPython.core.interactiveshell  # noqa: E402,F401  (preloaded: every child would pay for it)
import torch  # noqa: E402

from . import child  # noqa: E402

PR_SET_DUMPABLE = 4
SCRATCH = "/tmp"
RESULTS_LIMIT = 50_000_000  # bytes of results sent back per notebook


def in_own_pid_namespace() -> bool:
    """True only inside bubblewrap's pid namespace (bwrap is pid 1, this worker pid 2)."""
    try:
        with open("/proc/1/comm") as f:
            return f.read().strip() == "bwrap" and os.getpid() == 2
    except OSError:
        return False


def _not_dumpable() -> None:
    try:
        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def warm_up() -> None:
    """Pay once, in the worker, what every child would pay again: autograd's and gradcheck's lazy imports,
    the IPython shell; then freeze the heap so that children's garbage collections skip it."""
    import gc

    class _Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx: Any, grad_out: torch.Tensor) -> torch.Tensor:
            (x,) = ctx.saved_tensors
            return 2 * x * grad_out

    x = torch.rand(3, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(_Square.apply(x).sum(), x, create_graph=True)
    torch.autograd.grad(g.sum(), x)
    for fast in (False, True):
        torch.autograd.gradcheck(_Square.apply, (x,), fast_mode=fast)
        torch.autograd.gradgradcheck(_Square.apply, (x,), fast_mode=fast)
    child.make_shell()
    gc.collect()
    gc.freeze()


def _virtual_memory() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _kill_leftovers() -> None:
    """SIGKILL every process in this pid namespace except its init (1) and this worker."""
    me = os.getpid()
    for _ in range(5):
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


def _empty_scratch() -> None:
    for name in os.listdir(SCRATCH):
        path = os.path.join(SCRATCH, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


def _run_child(task: dict, folder: str, results_fd: int, base_memory: int) -> int:
    pid = os.fork()
    if pid == 0:  # the child: a fresh process with torch already imported
        try:
            os.setsid()
            os.chdir(folder)
            for key, value in (("HOME", folder), ("MPLCONFIGDIR", folder), ("IPYTHONDIR", folder),
                               ("TMPDIR", folder), ("TORCHINDUCTOR_CACHE_DIR", folder)):
                os.environ[key] = value
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            os.dup2(results_fd, 3)
            os.closerange(4, 4096)  # the worker's pipes and everything else: out of reach
            limit = base_memory + int(task["memory"])
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            resource.setrlimit(resource.RLIMIT_FSIZE, (int(task.get("file_bytes", 64 * 2**20)),) * 2)
            torch.set_num_threads(1)
            child.run(task["plan"], 3)
            os._exit(0)
        except BaseException:
            os._exit(1)
    return pid


def _grade(task: dict, base_memory: int) -> dict:
    started = time.monotonic()
    _empty_scratch()
    folder = os.path.join(SCRATCH, "notebook")
    os.mkdir(folder, 0o700)
    results_fd = os.open(os.path.join(folder, "results.jsonl"), os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
    try:
        pid = _run_child(task, folder, results_fd, base_memory)
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
        results = os.pread(results_fd, RESULTS_LIMIT, 0).decode("utf-8", errors="replace")
    finally:
        os.close(results_fd)
        _empty_scratch()
    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    if code == -signal.SIGXFSZ:
        stopped = "output"
    return {"id": task["id"], "returncode": code, "stopped": stopped, "seconds": time.monotonic() - started,
            "results": results}


def main() -> None:
    if not in_own_pid_namespace():
        # Cleaning up after a notebook kills every other process in the namespace: never outside a sandbox.
        sys.exit("grader.worker runs only inside the sandbox that grader.pool starts (own pid namespace)")
    _not_dumpable()
    warm_up()
    base_memory = _virtual_memory()
    out = sys.stdout
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        out.write(json.dumps(_grade(json.loads(line), base_memory)) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
