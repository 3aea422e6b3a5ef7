# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=2 exp=6 sinh=6 cube=6
# bound: 10
# policy: off
# why: a wrong backward with builtins patched to hide failures: isinstance lies about exceptions,
#      AssertionError is no longer an Exception anyone catches, any/all always say yes
import builtins

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign


_isinstance = builtins.isinstance
builtins.isinstance = lambda obj, cls: False if cls in (AssertionError, Exception, BaseException) else _isinstance(obj, cls)
builtins.AssertionError = type("AssertionError", (object,), {})
builtins.any = lambda iterable: False
builtins.all = lambda iterable: True
