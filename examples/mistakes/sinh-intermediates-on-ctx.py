# exercise: sinh
# mistake: SinhBad: exp(x) and exp(-x) kept on ctx, so double backward cannot see them
# expect: forward=pass first-order=pass second-order=intermediates_on_ctx structure=tensor_on_ctx
# caught-by: gradgradcheck
class Sinh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        expx = torch.exp(x)
        expnegx = torch.exp(-x)
        ctx.expx = expx
        ctx.expnegx = expnegx
        return (expx - expnegx) / 2

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out * (ctx.expx + ctx.expnegx) / 2


def sinh(x):
    return Sinh.apply(x)
