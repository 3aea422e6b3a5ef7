# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: policy
# refused: square
# why: attack on the policy through a library gadget (issue 29): copy.deepcopy's memo keeps the real
#      __dict__ of what it copied in memo[id(memo)], where a key __array_interface__ makes numpy read any address.
#      Graded code's deepcopy takes the object only; on the code before, the memo was handed out (no refusal).
import copy


class _Box:
    def __init__(self):
        self.items = [1]

import torch

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        memo = {}
        copy.deepcopy(_Box(), memo)
        kept = memo[id(memo)]
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
