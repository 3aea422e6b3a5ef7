# exercise: cube
# style: CubeBackward saves (grad_out, x) in the other order and names things differently
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return cube_forward(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return CubeBackward.apply(g, x)


class CubeBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, g, x):
        ctx.save_for_backward(g, x)
        return cube_backward(g, x)

    @staticmethod
    def backward(ctx, gg):
        g, x = ctx.saved_tensors
        d_g = cube_backward_backward_grad_out(gg, x)
        d_x = cube_backward_backward(gg, g, x)
        return d_g, d_x
