# exercise: exp
# style: saves the input and recomputes exp(x) in backward (tracked, so double backward still works)
class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.exp()

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return torch.exp(x) * grad_out
