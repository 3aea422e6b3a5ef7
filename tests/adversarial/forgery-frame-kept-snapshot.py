# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0 exp=0 sinh=0 cube=0
# bound: 15
# policy: off
# class: forgeries
# flagged: square
# why: a wrong backward (the sign); a frame walk (sys._getframe) reaches grader.sandboxed.child.run_cells's `kept` snapshot and
#      edits it in place, so that restore(), before each observation, itself installs a forged
#      torch.autograd.grad (the gradient of x**2 whenever the output comes from Square) and gradcheck /
#      gradgradcheck that always pass. On the old code: square=6 (full marks), nothing flagged (restored lists
#      torch.autograd.grad as "put back": the grader believes it undid a patch it made itself).
#      Now: the frame walk is flagged, and every check observed after it scores 0.
import sys

_real_grad = torch.autograd.grad


def _forged_grad(outputs, inputs, grad_outputs=None, **kwargs):
    outs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    if any(type(getattr(o, "grad_fn", None)).__name__ == "SquareBackward" for o in outs):
        ins = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        return _real_grad([x ** 2 for x in ins], ins, grad_outputs, **kwargs)
    return _real_grad(outputs, inputs, grad_outputs, **kwargs)


def _passes(*args, **kwargs):
    return True


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign


def _edit_snapshot():
    frame = sys._getframe()
    while frame is not None and not (frame.f_code.co_name == "run_cells" and frame.f_globals.get("__name__") == "grader.sandboxed.child"):
        frame = frame.f_back
    kept = frame.f_locals["kept"]
    for name, forged in (("grad", _forged_grad), ("gradcheck", _passes), ("gradgradcheck", _passes)):
        kept[(id(torch.autograd), name)] = (torch.autograd, forged,
                                            (forged.__code__, forged.__defaults__, forged.__kwdefaults__))


_edit_snapshot()
