# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: trust3b
# why: Square's backward returns torch.func.jvp(lambda t: t ** 2, (x,), (grad_out,))[1]: PyTorch's forward-mode
#      derivative of its own pow (for an elementwise function the jvp with grad_out is the vjp). torch.func.jvp
#      never starts the autograd engine, so the engine watch that catches torch.autograd.grad / torch.func.grad /
#      vjp in a backward (derivative_by_autograd) does not fire. Honestly 2 of 6 (the factor 2 missing); expected
#      0..2 (the derivative is not the student's). In-process: every check passes, square=6 (WORKED).
#      Graded by nbgrader (class trust3b, on 54c9625): square=6 (WORKED).
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return torch.func.jvp(lambda t: t ** 2, (x,), (grad_out,))[1]
