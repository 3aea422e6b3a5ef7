# exercise: square
# mistake: a minus sign in backward
# expect: forward=pass first-order=wrong_sign second-order=first_order_wrong_before_second structure=pass
# caught-by: gradcheck
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x
