# exercise: sinh
# mistake: SinhBad: exp(x) and exp(-x) are made inside forward and not returned as outputs, so they have no history (keeping them on ctx costs the structure point; it is not why double backward fails)
# expect: forward=pass first-order=pass second-order=intermediates_not_outputs structure=tensor_on_ctx
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
