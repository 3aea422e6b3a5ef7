# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: policy
# refused: square
# why: the outside tester's third forgery (issue 19): sys._getframe(2) from the cell, then f_back (no audit event on
#      CPython 3.11) up to the audit hook's `busy` switch; then ctypes and gc openly. On the old code: 6/6 unflagged.
#      Now sys, frames and f_back are unreachable.
import sys
frame = sys._getframe(2)
while frame is not None:
    frame = frame.f_back

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
