# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: trust3
# why: Square's backward writes no derivative: it recomputes the forward with grad enabled on a detached copy of x
#      and asks torch.autograd.grad for the gradient, so its first derivatives are autograd's numbers, not the
#      student's (the issue: such numbers earn no derivative points); the detached copy cuts double backward (the
#      second-order check fails on its own). Honestly: forward 1 + structure 1 at most.
#      On the old code (b0039a7): square=4 (forward 1, first order 2, structure 1).
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        with torch.enable_grad():
            copy = x.detach().requires_grad_()
            (grad,) = torch.autograd.grad(copy ** 2, copy, grad_out)
        return grad
