# exercise: square
# mistake: the input kept as a ctx attribute AND detached in backward: the detach, not the attribute, loses the second derivative (an input on ctx keeps its history)
# expect: forward=pass first-order=pass second-order=detach_in_backward structure=tensor_on_ctx
# caught-by: gradgradcheck
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out * 2 * ctx.x.detach()
