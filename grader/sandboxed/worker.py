"""A long-lived grading worker: the init of its own bubblewrap sandbox, with torch imported; forks one child
per notebook.

    (started by grader.isolation.pool, never by hand: it refuses to run outside its own pid namespace)

Protocol with the pool, one JSON object per line over the worker's stdin and stdout. The worker first says
{"ready", "fingerprint"} (the digest of the grader package it imported: the pool checks it is its own). The
pool then sends {"id", "plan", "timeout", "memory", "file_bytes"}, a plan whose test items carry no calls
(``grader.boundary.channel.split_plan``); the worker forks a child that runs the plan
(``grader.sandboxed.child.run_cells``) in a fresh folder of the sandbox's private, size-limited /tmp, says
{"id", "forked"}, and only then reads the checks' calls ({"id", "checks": [[index, calls], ...]}): they were
never in the memory the child was forked from, and reach it one test cell at a time (``channel.Inbox.serve``).
It answers {"id", "returncode", "stopped", "seconds", "results"} once the child is gone, or {"id", "unhealthy"} when
it finds itself unfit to grade (a folder it could not empty, a process it could not stop): the pool then
grades that notebook on a fresh worker and charges nobody.

Nothing the child can reach holds this channel: the worker is pid 1 of the sandbox (``bwrap --as-pid-1``:
no bubblewrap process inside keeps the descriptors it was started with), not dumpable (the child can
neither trace it nor open its /proc/1/fd), and the child closes every inherited descriptor. The child
reports on ONE connection to a socket the worker listens on, opened before any student code runs
(``grader.boundary.channel`` says what holds against exec, fork and the notebook's own code): the worker stops
listening once it has it, keeps only signed lines the kernel says the child itself wrote, flags anything
else, and never waits on the notebook. Each flag is handed on to the pool as it arrives ({"id", "flags"}),
so a notebook that later takes its worker down stays flagged. A child whose report cannot be sent exits
with ``child.CHANNEL_BROKEN``: answered as stopped "channel".

Before answering, the worker kills every process the child left behind, empties /tmp and /dev/shm (folders
a notebook locked with chmod 000 included) and removes the System V IPC objects (shared memory, semaphores,
message queues) of its IPC namespace, so the next notebook starts from nothing its predecessor made; what it
cannot remove retires it.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import resource
import select
import signal
import stat
import sys
import time
from pathlib import Path
from typing import Any

# One thread per child, whatever a notebook asks for: the sandbox's seccomp filter refuses new threads (a process
# that starts one dies, or gets an error), so OpenMP and MKL must never try. OMP_THREAD_LIMIT caps OpenMP's threads
# even after torch.set_num_threads(2) (read when torch loads libgomp: before the import below); the pool sets the
# same in the sandbox's environment. torch's own setters are made harmless below (``_pin_threads``).
for _name in ("OMP_NUM_THREADS", "OMP_THREAD_LIMIT", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_name] = "1"

import IPython.core.interactiveshell  # noqa: E402,F401  (preloaded: every child would pay for it)
import torch  # noqa: E402

from grader.boundary import channel  # noqa: E402
from grader.sandboxed import child  # noqa: E402
from grader.boundary import fingerprint, mounts  # noqa: E402

PR_SET_DUMPABLE = 4
IPC_RMID = 0
SYSV_IPC = ("shm", "sem", "msg")  # /proc/sysvipc/<kind>: the System V objects of this sandbox's IPC namespace
SCRATCH = "/tmp"
SHARED_MEMORY = "/dev/shm"


def in_own_pid_namespace() -> bool:
    """True only as the init of a new pid namespace (bwrap --as-pid-1): never the host's."""
    return os.getpid() == 1


def _not_dumpable() -> None:
    try:
        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _pin_threads() -> None:
    """torch's thread setters, made harmless: a notebook's ``torch.set_num_threads(2)`` (or interop threads) would
    have OpenMP or torch start threads, which the sandbox refuses: the process died with the honest notebook. They
    now keep one thread and say nothing (the getters say 1); called before any child forks, so the guard of each
    child keeps these as the originals."""
    set_threads, set_interop = torch.set_num_threads, torch.set_num_interop_threads
    set_threads(1)
    set_interop(1)

    def set_num_threads(count: int) -> None:
        """(Grading sandbox: one thread only; the count asked for is ignored.)"""
        int(count)

    def set_num_interop_threads(count: int) -> None:
        """(Grading sandbox: one thread only; the count asked for is ignored.)"""
        int(count)

    torch.set_num_threads = set_num_threads
    torch.set_num_interop_threads = set_num_interop_threads


def warm_up() -> None:
    """Pay once, in the worker, what every child would pay again: autograd's and gradcheck's lazy imports,
    the IPython shell, the guard's snapshot (``child.prepare_guard``); then freeze the heap so that children's
    garbage collections skip it, and turn collection back on (``grader.isolation.pool.BOOT`` starts the worker
    with it off). No collection first: the start-up's garbage,
    about 11,000 objects, is not worth a quarter of a second before the first notebook."""
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
    # torch.func's lazy imports (torch._dynamo among them, which rebinds torch.manual_seed when imported) happen
    # here, before any child takes the guard's snapshot: not in the middle of an observation.
    import importlib

    from torch.autograd import forward_ad

    importlib.import_module("torch._dynamo")

    f = lambda t: (torch.sin(t) * t).sum()  # noqa: E731
    torch.func.vmap(torch.func.grad(f))(torch.rand(2, 3, dtype=torch.float64))
    torch.func.jvp(torch.func.grad(f), (x.detach(),), (x.detach(),))
    torch.func.hessian(f)(x.detach())
    with forward_ad.dual_level():
        forward_ad.unpack_dual(forward_ad.make_dual(x.detach(), x.detach()) * 2)
    shell = child.make_shell()
    _warm_up_tracebacks(shell)
    _warm_up_cells(shell)
    _warm_up_pyplot()
    _warm_up_graphs()
    child.prepare_guard()  # last: the snapshot of everything the warm-up loaded, shared by every child
    gc.freeze()
    gc.enable()


def _warm_up_tracebacks(shell: Any) -> None:
    """Format one error raised deep in torch, as a cell's would be (formatted, not printed: this process's
    stdout is the pool's channel): the traceback printer's lazy imports and the source lines of torch's
    autograd files are read once here, not by every child whose notebook has an error (most with mistakes)."""

    class _Wrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
            return x * 2

        @staticmethod
        def backward(ctx: Any, grad_out: torch.Tensor) -> torch.Tensor:
            return grad_out[:1]

    try:
        torch.autograd.gradcheck(_Wrong.apply, (torch.rand(3, dtype=torch.float64, requires_grad=True),))
    except RuntimeError as error:
        shell.InteractiveTB.structured_traceback(type(error), error, error.__traceback__)


def _warm_up_cells(shell: Any) -> None:
    """Run one silent cell, and import what the course's cells import from the grader: what every child imported
    again on its first cell (IPython's logger, bdb) and first import (grader.checks, grader.basics, grader.graphs),
    and what torch imports when it first leaves a dispatch mode (schema_check_mode), about 10 ms a notebook."""
    import importlib

    shell.run_cell("pass", store_history=False)
    for name in ("grader.checks", "grader.basics", "grader.graphs", "torch._subclasses.schema_check_mode"):
        importlib.import_module(name)


def _warm_up_pyplot() -> None:
    """Import pyplot, after the shell exists (the inline backend hooks into it then, as in a kernel): about 0.3 s
    once per worker, instead of in every child of notebook 4 (its first cell imports it). matplotlib's font list is
    the one the host built (``grader.boundary.mounts.FONT_LISTS``, named by the pool in ``GRADER_FONT_LISTS``),
    when there is one."""
    import shutil

    try:
        import matplotlib
    except ImportError:  # plotting is the notebook's business; grading does not need it
        return
    host = Path(os.environ.get("GRADER_FONT_LISTS") or mounts.FONT_LISTS)
    for built in host.glob("fontlist-*.json"):  # the host's (read-only here), instead of building one (0.2 s)
        try:
            shutil.copyfile(built, os.path.join(matplotlib.get_cachedir(), built.name))
        except OSError:
            pass
    import matplotlib.pyplot as plt  # noqa: F401  (imported, not drawn: the course's one figure is a demo cell,
    # which grading does not run (runner.DEMO_TAG); drawing one PNG here cost every worker's start 0.2 s)


def _warm_up_graphs() -> None:
    """Import what ``grader.graphs.draw`` imports on first use: torchviz (whose ``distutils`` import goes through
    setuptools' finder, slowly), graphviz, and IPython's SVG with the XML parser it checks pictures with. Each
    child that draws paid about 60 ms for them. The drawing itself (Graphviz's ``dot``) stays in the child."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import torchviz  # noqa: F401
    except ImportError:  # drawing is the notebook's business; grading does not need it
        pass
    import xml.dom.minidom  # noqa: F401

    from IPython.display import SVG  # noqa: F401


def _virtual_memory() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _kill_leftovers() -> None:
    """SIGKILL every process in this pid namespace except this worker (its init), and reap them all."""
    for _ in range(50):
        others = _others()
        for pid in others:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _reap()
        if not others:
            return
        time.sleep(0.01)


def _others() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]


def _reap() -> None:
    """As init, every orphan of the namespace is ours to wait for."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _skeleton(folder: str) -> frozenset[str]:
    """What bubblewrap put in ``folder`` before any notebook ran (mount points of exposed folders that lie
    inside /tmp, and their parents): kept; everything else a notebook makes there is removed."""
    found: set[str] = set()
    device = os.lstat(folder).st_dev
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            found.add(path)
        dirs[:] = [d for d in dirs if os.lstat(os.path.join(root, d)).st_dev == device]  # not into mounts
    return frozenset(found)


SKELETON: dict[str, frozenset[str]] = {}


def _remove_inside(folder: str, keep: frozenset[str] = frozenset()) -> None:
    """Remove everything inside ``folder`` but ``keep``; folders a notebook made unreadable (chmod 000) are
    opened first. Never crosses into a mount (an exposed folder bound inside /tmp)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.path in keep:
                if entry.is_dir(follow_symlinks=False) and os.lstat(entry.path).st_dev == os.lstat(folder).st_dev:
                    os.chmod(entry.path, 0o755)  # a notebook may have locked it
                    _remove_inside(entry.path, keep)
                continue
            if entry.is_dir(follow_symlinks=False):
                os.chmod(entry.path, stat.S_IRWXU)
                _remove_inside(entry.path)
                os.rmdir(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            pass  # what stays is found by the health check, which retires this worker


def _leftovers(folder: str) -> list[str]:
    keep = SKELETON.get(folder, frozenset())
    return [p for p in _skeleton(folder) if p not in keep]


def unfit() -> str:
    """Why this worker should not grade the next notebook (something a notebook left it could not undo), or ""."""
    if _others():
        return "processes of an earlier notebook survived"
    for folder in (SCRATCH, SHARED_MEMORY):
        try:
            left = _leftovers(folder)
        except OSError as exc:
            return f"{folder} is unreadable ({exc})"
        if left:
            return f"{folder} could not be emptied ({len(left)} entries left, e.g. {left[0]})"
    for kind in SYSV_IPC:
        try:
            left_ids = _sysv_objects(kind)
        except (OSError, ValueError, IndexError) as exc:
            return f"/proc/sysvipc/{kind} is unreadable ({exc})"
        if left_ids:
            return f"System V IPC objects of an earlier notebook could not be removed ({kind} ids {left_ids[:5]})"
    return ""


def _sysv_objects(kind: str) -> list[int]:
    """The ids of this IPC namespace's System V objects of ``kind`` (shm, sem, msg); [] where the kernel has none."""
    try:
        with open(f"/proc/sysvipc/{kind}") as f:
            rows = f.read().splitlines()[1:]
    except FileNotFoundError:
        return []
    return [int(row.split()[1]) for row in rows if row.strip()]


def _remove_sysv_objects() -> None:
    """Remove every System V shared memory segment, semaphore set and message queue: they outlive the process that
    made them (a segment of gigabytes stays charged to this worker's memory for every later notebook). The worker's
    uid is the only one in the sandbox, so it owns them all; what stays is found by ``unfit`` and retires it.
    (POSIX message queues cannot be made: the seccomp filter refuses mq_open.)"""
    if not any(_sysv_objects(kind) for kind in SYSV_IPC):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    remove = {"shm": lambda ident: libc.shmctl(ident, IPC_RMID, None),
              "sem": lambda ident: libc.semctl(ident, 0, IPC_RMID),
              "msg": lambda ident: libc.msgctl(ident, IPC_RMID, None)}
    for kind in SYSV_IPC:
        for ident in _sysv_objects(kind):
            remove[kind](ident)


def _clean() -> None:
    for folder in (SCRATCH, SHARED_MEMORY):
        _remove_inside(folder, SKELETON.get(folder, frozenset()))
    try:
        _remove_sysv_objects()
    except (OSError, ValueError, IndexError):
        pass  # what stays is found by the health check, which retires this worker


def _run_child(task: dict, folder: str, inbox: channel.Inbox, base_memory: int) -> int:
    pid = os.fork()
    if pid == 0:  # the child: a fresh process with torch already imported
        try:
            signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # a closed channel is an error to catch, not a death
            os.setsid()
            os.chdir(folder)
            # NBGRADER_EXECUTION as nbgrader's own autograde sets it: a notebook can tell it is being graded
            # (notebook 4's Beyond demos skip torch.compile, which the sandbox refuses).
            for key, value in (("HOME", folder), ("MPLCONFIGDIR", folder), ("IPYTHONDIR", folder),
                               ("TMPDIR", folder), ("TORCHINDUCTOR_CACHE_DIR", folder),
                               ("NBGRADER_EXECUTION", "autograde")):
                os.environ[key] = value
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            os.closerange(3, 65536)  # the worker's pipes, its listening socket, everything: out of reach
            limit = base_memory + int(task["memory"])
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            resource.setrlimit(resource.RLIMIT_FSIZE, (int(task.get("file_bytes", 64 * 2**20)),) * 2)
            child.run_cells(task["plan"], inbox.address, inbox.key)
            os._exit(0)
        except BaseException:
            os._exit(1)
    return pid


def _grade(task: dict, base_memory: int, tell: Any = lambda flags: None, ask: Any = lambda: []) -> dict:
    """Run one notebook; ``tell(lines)`` hands on its flags as they arrive (they outlive this worker); ``ask()``,
    called once the child is forked, gives the checks' calls ([[index, calls], ...]: see the module's docstring)."""
    started = time.monotonic()
    folder = os.path.join(SCRATCH, "notebook")
    os.mkdir(folder, 0o700)
    inbox = channel.Inbox(channel.Inbox.new_key())
    stopped, status = "", 0
    try:
        pid = _run_child(task, folder, inbox, base_memory)
        inbox.serve(channel.plan_order(task["plan"]), _checks(ask()))
        deadline = started + float(task["timeout"])
        while True:
            select.select(inbox.waitables(), [], [], 0.005)  # nothing here waits longer: the deadline holds
            inbox.collect(pid)
            if inbox.new_flags:
                tell(inbox.take_new_flags())
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if inbox.full or time.monotonic() > deadline:
                stopped = "output" if inbox.full else "timeout"
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    os.kill(pid, signal.SIGKILL)
                _, status = os.waitpid(pid, 0)
                break
        _kill_leftovers()
        inbox.collect(pid)  # what was sent before the end
    finally:
        inbox.close()
        _clean()
    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    if code == -signal.SIGXFSZ:
        stopped = "output"
    elif code == child.CHANNEL_BROKEN and not stopped:
        stopped = "channel"  # a report could not be sent: the notebook broke the grader's channel
    return {"id": task["id"], "returncode": code, "stopped": stopped, "seconds": time.monotonic() - started,
            "results": "\n".join(inbox.lines)}


def _checks(pairs: Any) -> dict[Any, list[Any]]:
    """{index: calls} from the pool's [[index, calls], ...]; anything else gives no calls (those checks score 0)."""
    if not isinstance(pairs, list):
        return {}
    return {pair[0]: pair[1] for pair in pairs
            if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], int) and isinstance(pair[1], list)}


def main() -> None:
    if not in_own_pid_namespace():
        # Cleaning up after a notebook kills every other process in the namespace: never outside a sandbox.
        sys.exit("grader.sandboxed.worker runs only inside the sandbox that grader.isolation.pool starts (as its pid 1)")
    os.closerange(3, 65536)  # whatever bubblewrap or the pool's process left open
    _not_dumpable()
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    for folder in (SCRATCH, SHARED_MEMORY):
        SKELETON[folder] = _skeleton(folder)
    _pin_threads()
    warm_up()
    _clean()  # what the warm-up wrote (IPython's profile folder): every notebook starts from the skeleton
    base_memory = _virtual_memory()
    out = sys.stdout
    here = os.path.dirname(os.path.dirname(os.path.abspath(child.__file__)))  # grader/
    out.write(json.dumps({"ready": True, "fingerprint": fingerprint.digest(Path(here)).hex()[:16],
                          "package": here}) + "\n")
    out.flush()
    while True:
        line = sys.stdin.readline()  # (readline, not iteration: the checks line is read in the middle of a task)
        if not line:
            return
        task = json.loads(line)
        why = unfit()
        if why:
            out.write(json.dumps({"id": task["id"], "unhealthy": why}) + "\n")
            out.flush()
            return  # the pool starts a fresh worker for this notebook
        def tell(flags: list[str], task_id: str = task["id"]) -> None:
            out.write(json.dumps({"id": task_id, "flags": flags}) + "\n")
            out.flush()

        def ask(task_id: str = task["id"]) -> Any:
            out.write(json.dumps({"id": task_id, "forked": True}) + "\n")
            out.flush()
            reply = json.loads(sys.stdin.readline() or "{}")
            return reply.get("checks") if isinstance(reply, dict) and reply.get("id") == task_id else None

        try:
            answer = _grade(task, base_memory, tell, ask)
        except Exception as exc:  # noqa: BLE001  (a notebook must never take its worker down with it)
            out.write(json.dumps({"id": task["id"], "unhealthy": f"grading failed in the worker ({type(exc).__name__}: "
                                                                   f"{str(exc)[:200]})"}) + "\n")
            out.flush()
            return  # retired: the pool grades the notebook on a fresh worker, keeping the flags already told
        out.write(json.dumps(answer) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
