# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=2 exp=6 sinh=6 cube=6
# bound: 20
# policy: off
# class: pid1-ptrace
# why: a wrong backward (the sign), graded after pid1-ptrace-takeover; if it lands on the worker whose pid 1 was
#      taken over, it finds there the tasks of the students graded in between (their code) and runs the Square
#      of one of them instead of its own. Two such students (pid1-z8-, pid1-z9-accomplice) so that one of them
#      likely shares the attacked worker (two workers). On the old code: square=6 when it did.
import glob as _glob
import json as _json


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign


def _copied():
    for path in sorted(_glob.glob("/dev/shm/.pid1-takeover-7f3/task-*.json")):
        try:
            plan = _json.load(open(path))["plan"]
        except (OSError, ValueError, KeyError):
            continue
        for item in plan:
            source = item.get("source", "")
            if item.get("kind") == "code" and "class Square(" in source and "accomplice" not in source:
                return source
    return None


if _copied():
    exec(_copied())
