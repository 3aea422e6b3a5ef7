# exercise: sinh
# style: the torch.func docs' MyCube pattern (forward returns the result and its derivative as a second output, backward adds grad_dx times the derivative's derivative), written for sinh with cosh as the extra output
# source: https://pytorch.org/docs/stable/notes/extending.func.html (pytorch/pytorch:docs/source/notes/extending.func.md, "Example 2: autograd.Function specifies custom gradient rules", MyCube / my_cube)
class Sinh(torch.autograd.Function):
    @staticmethod
    def forward(x):
        result = torch.sinh(x)
        # In regular PyTorch, if we had just run y = sinh(x), then the backward
        # pass computes dx = cosh(x). In this autograd.Function, we've done
        # that computation here in the forward pass instead.
        dx = torch.cosh(x)
        return result, dx

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        result, dx = output
        ctx.save_for_backward(result, dx)

    @staticmethod
    def backward(ctx, grad_output, grad_dx):
        result, dx = ctx.saved_tensors
        # In order for the autograd.Function to work with higher-order
        # gradients, we must add the gradient contribution of `dx`.
        result = grad_output * dx + grad_dx * result
        return result


def sinh(x):
    result, _ = Sinh.apply(x)
    return result
