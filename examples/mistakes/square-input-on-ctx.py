# exercise: square
# mistake: the input is stored as a ctx attribute instead of with save_for_backward (gradcheck and gradgradcheck both pass)
# expect: forward=pass first-order=pass second-order=pass structure=tensor_on_ctx
# caught-by: neither
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out * 2 * ctx.x
