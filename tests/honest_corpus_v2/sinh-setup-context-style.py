# exercise: sinh
# style: the setup_context style for the tutorial's Sinh: forward(x) returns the three outputs, setup_context unpacks `_, expx, expnegx = output` and saves the extra outputs; the wrapper indexes [0]
# source: https://pytorch.org/docs/stable/notes/extending.html (setup_context(ctx, inputs, output)) and https://pytorch.org/tutorials/intermediate/custom_function_double_backward_tutorial.html (Sinh)
class Sinh(torch.autograd.Function):
    @staticmethod
    def forward(x):
        expx = torch.exp(x)
        expnegx = torch.exp(-x)
        return (expx - expnegx) / 2, expx, expnegx

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, expx, expnegx = output
        ctx.save_for_backward(expx, expnegx)

    @staticmethod
    def backward(ctx, grad_out, grad_expx, grad_expnegx):
        expx, expnegx = ctx.saved_tensors
        return grad_out * (expx + expnegx) / 2 + grad_expx * expx - grad_expnegx * expnegx


def sinh(x):
    return Sinh.apply(x)[0]
