# exercise: cube
# mistake: CubeBackward.backward returns None for grad_out: the gradient's dependence on grad_output is lost
# expect: forward=pass first-order=pass second-order=second_derivative_missing structure=pass
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
        return None, cube_backward_backward(grad_out, saved_grad_out, x)
