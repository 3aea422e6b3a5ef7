# exercise: exp
# mistake: saves the input and multiplies by it: the derivative of eˣ is eˣ, not x
# expect: forward=pass first-order=wrong_gradient second-order=first_order_wrong_before_second structure=pass
# caught-by: gradcheck
class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.exp(x)

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * x
