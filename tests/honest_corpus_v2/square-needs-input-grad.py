# exercise: square
# style: backward returns None when ctx.needs_input_grad[0] is False (the docs' "checks are optional, for efficiency"), else the gradient written with torch.mul
# source: https://pytorch.org/docs/stable/notes/extending.html ("needs_input_grad ... can be used to optimize backward")
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_out):
        if not ctx.needs_input_grad[0]:
            return None
        x, = ctx.saved_tensors
        return torch.mul(grad_out, 2 * x)
