# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=2 exp=6 sinh=6 cube=6
# bound: 10
# policy: off
# why: a wrong backward; grader.sandboxed.child.restore (which puts back what the notebook patched) made a no-op, then
#      grader.sandboxed.observe.observe patched to observe another (right) Function
import grader.sandboxed.child
import grader.sandboxed.observe

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

grader.sandboxed.child.restore = lambda kept: []
_observe = grader.sandboxed.observe.observe
grader.sandboxed.observe.observe = lambda check, ex, fn, probes: _observe(check, ex, _Honest.apply if ex.id == "square" else fn, probes)
