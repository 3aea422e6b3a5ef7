# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=2 exp=6 sinh=6 cube=6
# bound: 10
# policy: off
# why: a wrong backward, and every exception of later cells swallowed by a custom exception handler
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign


get_ipython().set_custom_exc((BaseException,), lambda shell, etype, evalue, tb, tb_offset=None: None)
