# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: policy
# refused: square
# why: the outside tester's second forgery (issue 19): compile() a helper whose file name lies under sys.base_prefix
#      so that the audit hook takes it for the standard library, walk frames up to the child's run and switch the
#      hook off. On the old code: 6/6 unflagged. Now compile (and exec, sys) are refused.
import torch
helper = compile("import sys\nf = sys._getframe(1)", "/usr/lib/python3.11/helper.py", "exec")
exec(helper)

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
