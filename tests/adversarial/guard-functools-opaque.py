# notebook: 04_modern_functions.ipynb
# cell: hvp
# others: solution
# expect: softplus=6 hvp=2
# bound: 20
# policy: off
# class: guard-reach
# why: hvp_forward computes H v by double backward (right values; forward-over-reverse must fail: 2 of 4). The
#      observer hands the student its probe function behind grader.sandboxed.observe_functions._opaque, which calls
#      functools.lru_cache when it runs: the cell replaces functools.lru_cache (the functools module is no
#      namespace of the guard's) by one that keeps each function it wraps, reaches the probe function's list of
#      calls through its __closure__ and adds a record "called under a jvp transform, with a tangent", as
#      nb4-hvp-closure-forgery did before _opaque. Now every library a grader module holds is a namespace of the
#      guard's (grader.sandboxed.guarded.reached). On the old code: hvp=4.
# <solution>
import functools

_lru_cache = functools.lru_cache
_wrapped = []


def _keeping(*args, **kwargs):
    decorate = _lru_cache(*args, **kwargs)

    def keep(fn):
        _wrapped.append(fn)
        return decorate(fn)

    return keep


functools.lru_cache = _keeping


def _forge_records():
    for fn in _wrapped[-3:]:
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                contents = cell.cell_contents
            except ValueError:
                continue
            if isinstance(contents, list) and not contents:
                contents.append({"transforms": ["Jvp"], "dual": True, "tracked": True})


def hvp_forward(f, x, v):
    _forge_records()
    x = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(f(x), x, create_graph=True)
    return torch.autograd.grad(g, x, v)[0]
