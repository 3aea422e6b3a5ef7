# exercise: square
# mistake: backward goes through NumPy, which autograd cannot record
# expect: forward=pass first-order=pass second-order=numpy_in_backward structure=pass
# caught-by: gradgradcheck
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * torch.as_tensor(2 * x.detach().numpy())
