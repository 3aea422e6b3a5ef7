# exercise: exp
# mistake: the output is kept as a ctx attribute (a reference cycle that leaks memory; gradcheck and gradgradcheck both pass)
# expect: forward=pass first-order=pass second-order=pass structure=tensor_on_ctx
# caught-by: neither
class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = torch.exp(x)
        ctx.result = result
        return result

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out * ctx.result
