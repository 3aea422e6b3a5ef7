# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: policy
# refused: square
# why: attack on the policy itself: NumPy's ctypes bridge (ndarray.ctypes, np.ctypeslib), its stride tricks and its
#      memory maps give raw memory without importing ctypes; a class whose __array_interface__ points anywhere
#      does too. All refused (by name, and no class may define that special method).
import numpy as np
import torch

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        a = np.zeros(4)
        getattr(a, "cty" + "pes")
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
