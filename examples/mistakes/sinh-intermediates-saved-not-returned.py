# exercise: sinh
# mistake: exp(x) and exp(-x) saved with ctx.save_for_backward but not returned as outputs: saving does not give an intermediate a history
# expect: forward=pass first-order=pass second-order=intermediates_not_outputs structure=pass
# caught-by: gradgradcheck
class Sinh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        expx = torch.exp(x)
        expnegx = torch.exp(-x)
        ctx.save_for_backward(expx, expnegx)
        return (expx - expnegx) / 2

    @staticmethod
    def backward(ctx, grad_out):
        expx, expnegx = ctx.saved_tensors
        return grad_out * (expx + expnegx) / 2


def sinh(x):
    return Sinh.apply(x)
