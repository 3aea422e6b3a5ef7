# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0 exp=0 sinh=0 cube=0
# bound: 15
# policy: off
# class: channel
# flagged: square
# why: forgery-gc-report-encoder's attack (a wrong backward, the `report` closure's encoder replaced through a gc
#      walk), with the flag silenced: the gc walk runs while the process may open no descriptor (soft
#      RLIMIT_NOFILE 0), and the limit is raised again after it. On the old code the audit hook's report could
#      not open its socket (EMFILE, swallowed): nothing was flagged and square scored 6. Now the report goes on
#      the connection opened before any student code: the walk is flagged and every later check scores 0.
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
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (0, hard))
    try:
        objects = gc.get_objects()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
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
