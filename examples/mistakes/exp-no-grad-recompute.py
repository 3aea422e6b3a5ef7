# exercise: exp
# mistake: recomputes exp(x) under torch.no_grad() in backward: the second derivative disappears
# expect: forward=pass first-order=pass second-order=no_grad_in_backward structure=pass
# caught-by: gradgradcheck
class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.exp(x)

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        with torch.no_grad():
            result = torch.exp(x)
        return grad_out * result
