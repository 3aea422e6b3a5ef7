# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: policy
# refused: square
# why: attack on the policy itself: pickling runs __reduce__, which can name any callable (os.system, getattr on a
#      module): a class with __reduce__ copied by copy.deepcopy, and torch.load of a crafted file. A class may not
#      define __reduce__, and torch.load is refused.
import copy
import torch

class Payload:
    def __reduce__(self):
        return (print, ("reduce ran",))

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        copy.deepcopy(Payload())
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
