# exercise: square
# mistake: backward computes in float64 "for precision" (x.double()): right for float64 inputs, but for float32 inputs it returns a float64 gradient that autograd casts back silently
# expect: forward=pass first-order=gradient_dtype_upcast second-order=pass structure=pass
# caught-by: neither
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * 2 * x.double()
