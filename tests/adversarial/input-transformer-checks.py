# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=2 exp=6 sinh=6 cube=6
# bound: 10
# policy: off
# why: a wrong backward, and IPython told to turn only cells that call the checks into `pass` (so the
#      student's later answers still run)
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign


def _skip_checks(lines):
    return ["pass\n"] if any("checks." in line or "basics." in line for line in lines) else lines


get_ipython().input_transformers_post.append(_skip_checks)
get_ipython().input_transformers_cleanup.append(_skip_checks)
