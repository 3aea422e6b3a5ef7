# exercise: sinh
# style: `import math` in the student's own cell above the answer; after the class, sinh(1.0) compared with math.sinh(1.0) with math.isclose
# source: https://docs.python.org/3/library/math.html#math.sinh and #math.isclose; the tutorial's Sinh
# %% cell: before
import math
# %% cell: answer
class Sinh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        expx = torch.exp(x)
        expnegx = torch.exp(-x)
        ctx.save_for_backward(expx, expnegx)
        return (expx - expnegx) / 2, expx, expnegx

    @staticmethod
    def backward(ctx, grad_out, grad_expx, grad_expnegx):
        expx, expnegx = ctx.saved_tensors
        return grad_out * (expx + expnegx) / 2 + grad_expx * expx - grad_expnegx * expnegx


def sinh(x):
    return Sinh.apply(x)[0]


assert math.isclose(sinh(torch.tensor(1.0, dtype=torch.double)).item(), math.sinh(1.0), rel_tol=1e-12)
