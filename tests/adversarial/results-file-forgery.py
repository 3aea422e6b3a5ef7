# notebook: 03_double_backward.ipynb
# cell: square exp
# others: solution
# expect: square=2 exp=6 sinh=6 cube=6
# bound: 10
# policy: off
# why: a wrong backward; in the next answer cell, observations of another (right) Function are appended to the
#      child's results file (results.jsonl in the working directory) for square's test cells, after the real ones
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
# %% cell: exp
import json

from grader.spec import exercises
from grader.sandboxed import observe
from grader.boundary import wire


class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = torch.exp(x)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_out):
        result, = ctx.saved_tensors
        return grad_out * result


class _Honest(torch.autograd.Function):  # what the forgery reports instead of Square
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return 2 * x * grad_out


_Honest.__name__ = _Honest.__qualname__ = "Square"


def _forge(plan_path="plan.json", results_path="results.jsonl"):
    with open(plan_path) as f:
        plan = json.load(f)
    for item in plan:
        if item["kind"] != "test" or not item["grade_id"].startswith("square-"):
            continue
        calls = []
        for call in item["calls"]:
            kwargs = dict(call["kwargs"])
            ex = exercises.get(kwargs.pop("exercise"))
            probes = ex.probes([tuple(s) for s in kwargs.get("shapes") or ex.default_shapes], int(kwargs.get("seed", 0)))
            calls.append({"observations": observe.observe(call["check"], ex, _Honest.apply, probes)})
        entry = {"event": "observed", "index": item["index"], "calls": calls, "restored": []}
        with open(results_path, "a") as f:
            f.write(json.dumps(wire.encode(entry)) + "\n")


try:
    _forge()
except OSError as error:
    print("no results file to forge:", error)
