# exercise: square
# mistake: .detach() inside backward: the first derivative is right, the second is missing here and silently wrong inside a bigger computation
# expect: forward=pass first-order=pass second-order=detach_in_backward structure=pass
# caught-by: gradgradcheck
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * 2 * x.detach()
