# exercise: square
# style: torch.einsum for the elementwise product in backward ("...,...->..." keeps any shape, 0-d included), forward by x * x
# source: https://pytorch.org/docs/stable/generated/torch.einsum.html (ellipsis broadcasting: "...") and the tutorial's Square
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return torch.einsum("...,...->...", grad_out, 2 * x)
