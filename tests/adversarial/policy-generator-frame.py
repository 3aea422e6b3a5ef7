# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: policy
# refused: square
# why: attack on the policy itself: a generator running inside backward reaches its own frame (gi_frame) and walks
#      f_back to the observer's frames; the attribute is named through a variable. Refused when it runs.
import torch

def _frames():
    yield 1

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        g = _frames()
        for name in ["gi_frame", "f_back", "f_back", "f_locals"]:
            g = getattr(g, name)
        return -grad_out * 2 * x  # wrong: the sign
