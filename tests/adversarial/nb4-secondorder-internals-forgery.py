# notebook: 04_modern_functions.ipynb 05_markers_and_capstone.ipynb
# cell: hvp penalty
# others: solution
# expect: softplus=6 sortvalues=4 hvp=0 penalty=1
# bound: 20
# policy: off
# class: forgeries4
# why: hvp and hvp_forward return the gradient, not H v (0 of 4); gradient_penalty has no create_graph (its value
#      is right, its gradient check must fail: 1 of 3). At cell level, the notebook puts into
#      grader.sandboxed.observe_functions.OBSERVERS (a dict: the guard put back module attributes, not what a dict
#      holds) observers that call right answers instead, and replaces what the trusted side uses
#      (torch.func.hessian, the references of grader.spec.function_probes and grader.judge.second_order, its
#      judges, grader.judge.functions.judge): those run outside the sandbox and are never reached. On the old code:
#      hvp=4 penalty=3.
# %% cell: hvp
import grader.judge.functions
import grader.judge.second_order
import grader.sandboxed.observe_functions
import grader.spec.function_probes
import torch.func


def hvp(f, x, v):
    x = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(f(x), x, create_graph=True)
    return g  # wrong: the gradient, not H v


def hvp_forward(f, x, v):
    return hvp(f, x, v)


def _right_hvp(f, x, v):
    x = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(f(x), x, create_graph=True)
    return torch.autograd.grad(g, x, v)[0]


def _right_hvp_forward(f, x, v):
    return torch.func.jvp(torch.func.grad(f), (x,), (v,))[1]


_OBSERVERS = grader.sandboxed.observe_functions.OBSERVERS


def _observing(observe_one, right):
    return lambda fn, p, stale, namespace=None: observe_one(right, p, stale, namespace)


for _name, _right in (("check_hvp", _right_hvp), ("check_hvp_forward_over_reverse", _right_hvp_forward)):
    _OBSERVERS[_name] = _observing(_OBSERVERS[_name], _right)
torch.func.hessian = lambda f, *a, **k: (lambda x: torch.zeros(x.shape + x.shape, dtype=x.dtype))
grader.judge.second_order._hvp_reference = lambda p: (None, None, None)
grader.judge.second_order._judge_hvp_probe = lambda *args: None
grader.judge.functions.JUDGES["check_hvp"] = lambda *args: None
grader.judge.functions.judge = lambda *args, **kwargs: "all good"
# %% cell: penalty
def gradient_penalty(f, w, x):
    x = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(f(w, x).sum(), x)  # wrong: no create_graph, the penalty has no gradient
    return ((g.flatten(1).norm(dim=1) - 1) ** 2).mean()


def _right_penalty(f, w, x):
    x = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(f(w, x).sum(), x, create_graph=True)
    return ((g.flatten(1).norm(dim=1) - 1) ** 2).mean()


for _name in ("check_penalty_value", "check_penalty_gradient"):
    _OBSERVERS[_name] = _observing(_OBSERVERS[_name], _right_penalty)
grader.spec.function_probes.penalty_reference = lambda f, w, x: torch.zeros((), dtype=torch.float64)
grader.judge.second_order.penalty_reference = grader.spec.function_probes.penalty_reference
grader.judge.second_order._judge_penalty_probe = lambda *args: None
grader.judge.functions.JUDGES["check_penalty_gradient"] = lambda *args: None
