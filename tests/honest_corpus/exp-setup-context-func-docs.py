# exercise: exp
# style: the torch.func docs' setup_context style (forward without ctx, outputs saved in setup_context), as their MyExp/MyCube examples write it; the class renamed Exp
# source: https://pytorch.org/docs/stable/notes/extending.func.html (pytorch/pytorch:docs/source/notes/extending.func.md, "Example 2" pattern)
class Exp(torch.autograd.Function):
    @staticmethod
    def forward(x):
        result = x.exp()
        return result

    # setup_context is responsible for calling methods and/or assigning to
    # the ctx object. Please do not do additional compute (e.g. add
    # Tensors together) in setup_context.
    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        result = output
        ctx.save_for_backward(result)

    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        return grad_output * result
