# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0 exp=0 sinh=0 cube=0
# bound: 15
# policy: off
# why: a wrong backward, and a sys.settrace hook that, when grader.sandboxed.observe.observe returns, replaces its list of
#      observations (in place) by observations of another (right) Function. The trace hook is flagged: every
#      check observed after it scores 0 (any of them could be forged), and the instructor sees the flag
import sys

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign


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


def _tracer(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "observe" and frame.f_globals.get("__name__") == "grader.sandboxed.observe":
        return _on_return
    return None


def _on_return(frame, event, arg):
    if event == "return" and isinstance(arg, list) and frame.f_locals["ex"].id == "square":
        sys.settrace(None)
        try:
            local = frame.f_locals
            arg[:] = [frame.f_globals["OBSERVERS"][local["check"]](local["ex"], _Honest.apply, p) for p in local["probes"]]
        finally:
            sys.settrace(_tracer)
    return _on_return


sys.settrace(_tracer)
