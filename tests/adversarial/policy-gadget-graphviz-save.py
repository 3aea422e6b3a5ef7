# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: policy
# refused: square
# why: attack on the policy through a library gadget (issue 29): a graphviz graph (torchviz.make_dot's)
#      writes any file with save/render. Graphs are read through an allow-list (source, node, edge, attr ...); on the
#      code before, the file was written (no refusal).
import torchviz

import torch

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        torchviz.make_dot(x * x).save("/tmp/policy-gadget-graphviz-save.gv")
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
