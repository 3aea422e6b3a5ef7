# notebook: 03_double_backward.ipynb
# cell: sinh
# others: solution
# expect: square=6 exp=6 sinh=0..2 cube=6
# bound: 15
# class: trust3
# why: the sinh exercise (test cells call `sinh`, which must return sinh(x) alone, made by Sinh) answered with no
#      Sinh derivative at all: `sinh(x)` returns `_Pass.apply(torch.sinh(x))`, _Pass a do-nothing custom Function,
#      so the derivatives are autograd's own of torch.sinh; the Sinh class beside it has a wrong backward (sinh for
#      cosh) that is never called. Like the catalogued sinh-wrapper-bypasses (0 of 6: not_custom_function), it must
#      not earn derivative points; a Function with a wrong backward earns at most forward + structure (2).
#      On the old code (b0039a7): sinh=6.
class Sinh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        expx = torch.exp(x)
        expnegx = torch.exp(-x)
        ctx.save_for_backward(expx, expnegx)
        return (expx - expnegx) / 2, expx, expnegx

    @staticmethod
    def backward(ctx, grad_out, grad_expx, grad_expnegx):
        expx, expnegx = ctx.saved_tensors
        return grad_out * (expx - expnegx) / 2  # wrong: the derivative of sinh is cosh (never called)


class _Pass(torch.autograd.Function):
    @staticmethod
    def forward(ctx, y):
        return y.view_as(y)

    @staticmethod
    def backward(ctx, grad):
        return grad


def sinh(x):
    return _Pass.apply(torch.sinh(x))
