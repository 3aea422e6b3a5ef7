# exercise: cube
# mistake: CubeBackward.backward passes the gradient it receives as the saved grad_out too: cube_backward_backward(grad_out, grad_out, x)
# expect: forward=pass first-order=pass second-order=second_derivative_wrong structure=pass
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
        dx = cube_backward_backward(grad_out, grad_out, x)
        dgrad_out = cube_backward_backward_grad_out(grad_out, x)
        return dgrad_out, dx
