# exercise: square
# mistake: backward returns dy/dx alone, forgetting to multiply by grad_out (chain rule)
# expect: forward=pass first-order=forgot_grad_output second-order=first_order_wrong_before_second structure=pass
# caught-by: gradcheck
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return 2 * x
