# exercise: square
# style: method calls throughout: x.pow(2) in forward, grad_out.mul(x).mul(2) in backward (x.mul(2) style), saved_tensors indexed with [0]
# source: https://pytorch.org/docs/stable/generated/torch.Tensor.mul.html and https://pytorch.org/tutorials/intermediate/custom_function_double_backward_tutorial.html (Square)
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.pow(2)

    @staticmethod
    def backward(ctx, grad_out):
        x = ctx.saved_tensors[0]
        return grad_out.mul(x.mul(2))
