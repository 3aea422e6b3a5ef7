# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0 exp=0 sinh=0 cube=0
# bound: 15
# policy: off
# class: forgeries
# flagged: square
# why: a wrong backward (the sign); gc.get_objects() finds grader.sandboxed.child.run_cells's `report` closure (and the plan),
#      and the closure's `encode` cell is replaced by an encoder that, for square's test cells, encodes
#      observations of another (right) Function made with the plan's own check calls. restore() guards module
#      attributes and function code, not closure cells. On the old code: square=6 (full marks), nothing flagged.
#      Now: the gc walk is flagged, and every check observed after it scores 0.
import gc
import types

from grader.spec import exercises
from grader.sandboxed import observe


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign


class _Honest(torch.autograd.Function):  # what the forged encoder reports instead of Square
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return 2 * x * grad_out


_Honest.__name__ = _Honest.__qualname__ = "Square"


def _hijack():
    objects = gc.get_objects()
    report = next(o for o in objects if isinstance(o, types.FunctionType)
                  and o.__qualname__ == "run.<locals>.report" and o.__module__ == "grader.sandboxed.child")
    items = {o["index"]: o for o in objects
             if type(o) is dict and o.get("kind") == "test" and str(o.get("grade_id", "")).startswith("square-")}
    cell = report.__closure__[report.__code__.co_freevars.index("encode")]
    real_encode = cell.cell_contents

    def forged_encode(entry):
        item = items.get(entry.get("index")) if isinstance(entry, dict) else None
        if item is not None and entry.get("event") == "observed":
            calls = []
            for call in item["calls"]:
                kwargs = dict(call["kwargs"])
                ex = exercises.get(kwargs.pop("exercise"))
                probes = ex.probes([tuple(s) for s in kwargs.get("shapes") or ex.default_shapes], int(kwargs.get("seed", 0)))
                calls.append({"observations": observe.observe(call["check"], ex, _Honest.apply, probes)})
            entry = {**entry, "calls": calls}
        return real_encode(entry)

    cell.cell_contents = forged_encode


_hijack()
