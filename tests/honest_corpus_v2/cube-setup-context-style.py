# exercise: cube
# style: both Functions in the setup_context style (forward without ctx calling the NumPy helpers, inputs saved in setup_context), as the torch.func docs write NumPy-backed Functions
# source: https://pytorch.org/docs/stable/notes/extending.func.html (NumpySort / NumpyTake: forward without ctx, setup_context saves) with notebook 3's helpers
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return cube_forward(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return CubeBackward.apply(grad_out, x)


class CubeBackward(torch.autograd.Function):
    @staticmethod
    def forward(grad_out, x):
        return cube_backward(grad_out, x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        grad_out, x = inputs
        ctx.save_for_backward(x, grad_out)

    @staticmethod
    def backward(ctx, grad_out):
        x, sav_grad_out = ctx.saved_tensors
        return cube_backward_backward_grad_out(grad_out, x), cube_backward_backward(grad_out, sav_grad_out, x)
