# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: policy
# refused: square
# why: attack through the instructor's cells, which run unrestricted: the set-up cell leaves the grader's `checks`
#      module in the namespace; the attack walks from it to grader.sandboxed.observe and replaces its gradient recorder.
#      The grader's modules are not among the course's: nothing can be read or written through them.
import torch

observe = getattr(checks, "observe")
observe.observe = lambda *a, **k: []

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
