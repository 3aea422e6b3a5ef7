# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: policy
# refused: square
# why: the outside tester's fourth forgery (issue 19): os.execv a fresh interpreter that re-runs the child's entry
#      point with the Square cell replaced; exec keeps the pid, so SO_PEERCRED accepted its reports. On the old
#      code: 6/6 unflagged. Now os cannot be imported (and the channel refuses a process that exec'd).
import os, sys
os.execv(sys.executable, [sys.executable, "-c", "print('rerun')"])

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
