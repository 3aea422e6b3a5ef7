# notebook: 03_double_backward.ipynb
# cell: square exp
# others: solution
# expect: square=6 exp=6 sinh=6 cube=6
# bound: 10
# policy: off
# why: right answers whose forward and backward warn (warnings.warn, and torch's own UserWarning for
#      torch.tensor(a_tensor)) and print to stderr: warnings and stderr cost no points
# %% cell: square
import sys
import warnings

warnings.simplefilter("always")


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        warnings.warn("forward of Square: about to square")
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        warnings.warn("backward of Square: this is fine", RuntimeWarning)
        print("a note on stderr", file=sys.stderr)
        return grad_out * 2 * x
# %% cell: exp
import warnings


class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = torch.exp(x)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_out):
        result, = ctx.saved_tensors
        torch.tensor(result)  # torch warns: copy-construct from a tensor (the result is thrown away)
        warnings.warn(DeprecationWarning("backward of Exp: deprecated, but right"))
        return grad_out * result
