# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: policy
# refused: square
# why: attack on the policy itself: descriptors. A property put on torch.Tensor (a library class) would run student
#      code whenever the observer reads `.grad`; written by setattr, by assignment and through a student subclass's
#      __get__. Changing a library class is refused, and so is defining __get__.
import torch

def _lying_grad(self):
    return None

setattr(torch.Tensor, "grad", property(_lying_grad))

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
