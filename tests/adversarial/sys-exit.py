# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=6 exp=6 sinh=6 cube=6
# bound: 10
# policy: off
# why: sys.exit() at the end of a right answer: as in Jupyter, the cell reports SystemExit and the notebook goes on
import sys


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * 2 * x


sys.exit()
