# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: policy
# refused: square
# why: attack on the policy through a library gadget (issue 29): plt.switch_backend("module://x") imports
#      any installed module (here the standard library's this, which prints when imported). pyplot is an allow-list of
#      plotting functions now; on the code before, the module was imported (no refusal).
import matplotlib.pyplot as plt

import torch

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        plt.switch_backend("module://this")
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
