# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: policy
# refused: square
# why: attack on the policy itself: torch's own escape hatches reached without importing them by name: torch.ops
#      and torch.library (an operator whose autograd kernel is the student's), torch.utils.cpp_extension (C code),
#      modules hanging off torch (torch.os, torch.sys). All refused by the runtime's getattr.
import torch

hatch = "".join(["o", "p", "s"])
getattr(torch, hatch)

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
