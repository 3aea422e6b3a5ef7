# exercise: square
# mistake: backward computes in float32 (the engine casts it back silently; precision is lost)
# expect: forward=pass first-order=gradient_dtype second-order=gradgradcheck_failed structure=pass
# caught-by: gradgradcheck
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out.float() * 2 * x.float()
