# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: policy
# refused: square
# why: attack on the policy itself: an attribute chain through allowed objects (a bound method's __self__, then a
#      function's __globals__, names built at run time so no dunder appears in the source) to reach builtins and
#      the grader's modules, then the observer. Every read goes through the policy's getattr: refused when it runs.
import torch

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        d = "_" * 2
        owner = getattr(print, d + "self" + d)            # the builtins module
        grader = getattr(owner, d + "import" + d)("grader.sandboxed.observe")
        getattr(grader, "observe")
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
