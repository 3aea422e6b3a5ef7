# exercise: cube
# style: @once_differentiable on CubeBackward.backward (imported from torch.autograd.function): legitimate there, since that backward is NumPy code autograd cannot differentiate anyway and the exercise asks for second derivatives only
# source: https://pytorch.org/docs/stable/autograd.html (torch.autograd.function.once_differentiable) and https://pytorch.org/tutorials/intermediate/custom_function_double_backward_tutorial.html ("When Backward is not Tracked": CubeBackward)
from torch.autograd.function import once_differentiable


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return cube_forward(x)

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return CubeBackward.apply(grad_out, x)


class CubeBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, grad_out, x):
        ctx.save_for_backward(x, grad_out)
        return cube_backward(grad_out, x)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        x, sav_grad_out = ctx.saved_tensors
        dx = cube_backward_backward(grad_out, sav_grad_out, x)
        dgrad_out = cube_backward_backward_grad_out(grad_out, x)
        return dgrad_out, dx
