# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: policy
# refused: square
# why: attack on the policy through a library gadget (issue 29): numpy.frombuffer over an object array
#      reads (and, writable, writes) its pointers as numbers: any address as an object. Graded code's frombuffer
#      reads bytes and bytearray only; on the code before, the view was made (no refusal).
import numpy as np

import torch

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        pointers = np.frombuffer(np.empty(1, dtype=object), np.int64)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
