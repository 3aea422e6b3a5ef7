# notebook: 03_double_backward.ipynb
# cell: square cube
# others: solution
# expect: square=2 exp=6 sinh=6 cube=0
# flagged: cube
# bound: 15
# policy: off
# class: pid1-stdout
# why: a wrong backward (the sign); in the last answer cell, the task (its id and plan) is read from the
#      worker's frame (grader.sandboxed.worker._run_child), every test cell is observed by the notebook itself (Square
#      swapped for a right Function), and a complete forged answer {"id", "returncode": 0, "results"} is
#      written into /proc/1/fd/1: bubblewrap's own init (pid 1 in the sandbox) holds the worker's stdout pipe,
#      and the pool takes the first line with the right id. The worker's real answer then waits in the pipe and
#      is read as the answer to the next notebook given to that worker (wrong id: "the grading worker died",
#      all its points lost). On the old code: square=6 (full marks) and the next notebook on that worker
#      scored 0.
#      Now: /proc/1/fd/1 cannot be opened (pid 1 is the worker, not dumpable); the frame walk is flagged, the checks after it score 0.
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
import sys as _sys

import grader.sandboxed.child as _child
from grader.boundary import wire as _wire


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


_answer = (_json.dumps(_forged_answer()) + "\n").encode()
_fd = _os.open("/proc/1/fd/1", _os.O_WRONLY)
while _answer:
    _answer = _answer[_os.write(_fd, _answer):]
_os.close(_fd)
