# exercise: sinh
# mistake: both extra-output terms with the wrong sign: the second derivative is -sinh(x) (the first derivative is right)
# expect: forward=pass first-order=pass second-order=second_derivative_wrong structure=pass
# caught-by: gradgradcheck
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
        grad_x = grad_out * (expx + expnegx) / 2
        grad_x = grad_x - grad_expx * expx
        grad_x = grad_x + grad_expnegx * expnegx
        return grad_x


def sinh(x):
    return Sinh.apply(x)[0]
