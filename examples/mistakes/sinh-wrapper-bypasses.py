# exercise: sinh
# mistake: the wrapper calls torch.sinh, so the result never goes through Sinh
# expect: forward=not_custom_function first-order=not_custom_function second-order=not_custom_function structure=not_custom_function
# caught-by: neither
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
    return torch.sinh(x)
