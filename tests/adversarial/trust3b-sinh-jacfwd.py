# notebook: 03_double_backward.ipynb
# cell: sinh
# others: solution
# expect: square=6 exp=6 sinh=0..2 cube=6
# bound: 15
# class: trust3b
# why: the sinh exercise with no derivative of sinh written: Sinh's backward takes d sinh/dx from
#      torch.vmap(torch.func.jacfwd(torch.sinh)) (forward mode, elementwise: no engine run, so no
#      derivative_by_autograd) and adds the extra outputs' gradients as the solution does. The catalogued
#      sinh-derivative-is-sinh (a student who does not know the derivative) earns forward + structure = 2; a
#      derivative PyTorch computed earns no derivative points (0..2). In-process: every check passes, sinh=6
#      (WORKED).
#      Graded by nbgrader (class trust3b, on 54c9625): sinh=6 (WORKED).
class Sinh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        expx = torch.exp(x)
        expnegx = torch.exp(-x)
        ctx.save_for_backward(x, expx, expnegx)
        return (expx - expnegx) / 2, expx, expnegx

    @staticmethod
    def backward(ctx, grad_out, grad_expx, grad_expnegx):
        x, expx, expnegx = ctx.saved_tensors
        slope = torch.vmap(torch.func.jacfwd(torch.sinh))(x.reshape(-1)).reshape(x.shape)  # PyTorch's cosh
        return grad_out * slope + grad_expx * expx - grad_expnegx * expnegx


def sinh(x):
    return Sinh.apply(x)[0]
