# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=2 exp=6 sinh=6 cube=6
# bound: 10
# policy: off
# why: a wrong backward, and grader.sandboxed.child's observe_call / resolve (the functions the sandboxed child calls
#      for each check) replaced so that another (right) Function is observed under the name Square
import grader.sandboxed.child

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

_observe_call = grader.sandboxed.child.observe_call
grader.sandboxed.child.observe_call = lambda call, namespace: _observe_call(call, {**namespace, "Square": _Honest})
_resolve = grader.sandboxed.child.resolve
grader.sandboxed.child.resolve = lambda entry, namespace: _resolve(entry, {**namespace, "Square": _Honest})
