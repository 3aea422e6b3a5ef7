# notebook: 05_markers_and_capstone.ipynb
# cell: penalty
# others: solution
# expect: sortvalues=4 penalty=1
# bound: 20
# policy: off
# class: forgeries4
# why: gradient_penalty whose gradient with respect to w is wrong (one factor of the square is a constant: the
#      value is right, the gradient half of it; 1 of 3) replaces, in the globals of the module that built the
#      model f it was given (f.__globals__, else sys.modules), `torch` by a stand-in whose autograd.grad
#      differentiates a right penalty instead: the observer records the gradient of the returned penalty through
#      it after gradient_penalty returns. The guard puts those globals back when gradient_penalty returns; without
#      it (run in the student's own kernel): penalty=3.
import sys
import types

_kept = []


class _StandIn(types.ModuleType):
    def __init__(self, name, real, **replaced):
        super().__init__(name)
        self._real = real
        vars(self).update(replaced)

    def __getattr__(self, name):
        return getattr(self._real, name)


def _forged_grad(outputs, inputs, *args, **kwargs):
    if _kept and kwargs.get("allow_unused"):  # the observer's call (it allows unused inputs)
        return torch.autograd.grad(_kept[-1], inputs, *args, **kwargs)
    return torch.autograd.grad(outputs, inputs, *args, **kwargs)


_stand_in = _StandIn("torch", torch, autograd=_StandIn("torch.autograd", torch.autograd, grad=_forged_grad))


def gradient_penalty(f, w, x):
    x = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(f(w, x).sum(), x, create_graph=True)
    norms = g.flatten(1).norm(dim=1)
    _kept.append(((norms - 1) ** 2).mean())
    module_globals = getattr(f, "__globals__", None) or vars(sys.modules["grader.sandboxed.observe_functions"])
    module_globals["torch"] = _stand_in
    return ((norms.detach() - 1) * (norms - 1)).mean()  # wrong: half the gradient
