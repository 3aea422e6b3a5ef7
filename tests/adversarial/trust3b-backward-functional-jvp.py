# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: trust3b
# why: (a control of the engine watch) Square's backward returns torch.autograd.functional.jvp(lambda t: t ** 2,
#      x, grad_out)[1]: PyTorch's derivative of its pow, but autograd.functional.jvp computes a jvp by the
#      double-backward trick, which starts the engine inside the backward: the watch must flag it
#      (derivative_by_autograd). Honestly 2 of 6; expected 0..2. In-process: first and second order fail with
#      derivative_by_autograd, square=2 (held).
#      Graded by nbgrader (class trust3b, on 54c9625): square=2 (held).
import torch.autograd.functional as AF


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return AF.jvp(lambda t: t ** 2, x, grad_out)[1]
