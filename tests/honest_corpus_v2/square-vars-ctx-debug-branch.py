# exercise: square
# style: a DEBUG flag and `print(vars(ctx))` in a branch of backward that never runs (DEBUG = False): a student's leftover debugging of what sits on ctx
# source: https://docs.python.org/3/library/functions.html#vars (vars(object) returns the __dict__) as students use it to look inside ctx; the tutorial's Square (https://pytorch.org/tutorials/intermediate/custom_function_double_backward_tutorial.html)
DEBUG = False


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        if DEBUG:
            print(vars(ctx))
        x, = ctx.saved_tensors
        return grad_out * 2 * x
