# exercise: square
# style: after the class, a quick look at what apply returns: `type(y).__name__`, y.grad_fn and its name (type(y.grad_fn).__name__ = "SquareBackward"), printed with f-strings
# source: https://pytorch.org/docs/stable/notes/autograd.html (grad_fn of a custom Function's output is its backward node) and the tutorial's Square
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * 2 * x


y = Square.apply(torch.randn(2, requires_grad=True))
print(f"{type(y).__name__}: grad_fn {y.grad_fn} ({type(y.grad_fn).__name__})")
