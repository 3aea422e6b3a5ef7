# exercise: cube
# style: forward also returns the intermediate 3x² (PyTorch's documented MyCube), marked non-differentiable; apply is wrapped to return only x³
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        dx = cube_backward(torch.ones_like(x), x)
        ctx.mark_non_differentiable(dx)
        return cube_forward(x), dx

    @staticmethod
    def backward(ctx, grad_out, grad_dx):
        x, = ctx.saved_tensors
        return CubeBackward.apply(grad_out, x)


_cube_apply = Cube.apply
Cube.apply = lambda x: _cube_apply(x)[0]


class CubeBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, grad_out, x):
        ctx.save_for_backward(x, grad_out)
        return cube_backward(grad_out, x)

    @staticmethod
    def backward(ctx, grad_out):
        x, saved_grad_out = ctx.saved_tensors
        return (cube_backward_backward_grad_out(grad_out, x),
                cube_backward_backward(grad_out, saved_grad_out, x))
