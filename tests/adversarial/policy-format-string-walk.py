# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: policy
# refused: square
# why: attack on the policy itself: str.format reads attributes named in its template ("{0.__globals__}"), which
#      no attribute node of the source shows; reached as a bound method, as str.format on the type, through
#      format_map and through functools.partial. The policy hands out a formatter whose field walk is its getattr.
import functools
import torch

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        leak = functools.partial(str.format, "{0.__globals__[__builtins__]}")
        leak(Square.forward)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
