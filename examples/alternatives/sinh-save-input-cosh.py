# exercise: sinh
# style: saves its input and uses torch.cosh in backward (one output; still twice differentiable)
class Sinh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sinh(x)

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * torch.cosh(x)


def sinh(x):
    return Sinh.apply(x)
