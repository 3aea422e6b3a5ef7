# exercise: sinh
# mistake: returns exp(x), exp(-x) as outputs but backward ignores their gradients
# expect: forward=pass first-order=pass second-order=extra_output_gradients_ignored structure=pass
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
        return grad_out * (expx + expnegx) / 2


def sinh(x):
    return Sinh.apply(x)[0]
