# exercise: square
# style: the setup_context style (forward without ctx) with torch.square, inputs unpacked in setup_context; a gradcheck/gradgradcheck pair in the cell as the tutorial runs them
# source: https://pytorch.org/docs/stable/notes/extending.html ("Combined or separate forward() and setup_context()") and https://pytorch.org/docs/stable/generated/torch.square.html
class Square(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return torch.square(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * 2 * x


x = torch.rand(3, 3, requires_grad=True, dtype=torch.double)
torch.autograd.gradcheck(Square.apply, x)
torch.autograd.gradgradcheck(Square.apply, x)
