# exercise: cube
# mistake: CubeBackward.backward returns (d x, d grad_out) instead of the order of its inputs (grad_out, x)
# expect: forward=pass first-order=pass second-order=double_backward_wrong_order structure=pass
# caught-by: gradgradcheck
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
    def backward(ctx, grad_out):
        x, saved_grad_out = ctx.saved_tensors
        dx = cube_backward_backward(grad_out, saved_grad_out, x)
        dgrad_out = cube_backward_backward_grad_out(grad_out, x)
        return dx, dgrad_out
