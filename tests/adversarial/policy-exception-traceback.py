# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: policy
# refused: square
# why: attack on the policy itself: an exception raised inside torch carries a traceback whose frames lead up to
#      the observer (tb_frame, f_back); read by a name built at run time through getattr, so that the source shows
#      no refused attribute. Refused when it runs.
import torch

def _up(error):
    tb = getattr(error, "_" * 2 + "traceback" + "_" * 2)
    return getattr(tb, "tb_" + "frame")

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        try:
            torch.ones(2) @ torch.ones(3)
        except RuntimeError as error:
            _up(error)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
