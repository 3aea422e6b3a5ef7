# exercise: sinh
# mistake: the wrapper returns all three outputs instead of sinh(x) alone
# expect: forward=returns_tuple first-order=returns_tuple second-order=returns_tuple structure=returns_tuple
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
    return Sinh.apply(x)
