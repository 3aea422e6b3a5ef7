# exercise: cube
# mistake: Cube.backward calls the NumPy helper directly instead of CubeBackward.apply: no second derivative
# expect: forward=pass first-order=pass second-order=backward_not_through_function structure=derivatives_right_not_through_function
# caught-by: gradgradcheck
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return cube_forward(x)

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return cube_backward(grad_out, x)


class CubeBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, grad_out, x):
        ctx.save_for_backward(x, grad_out)
        return cube_backward(grad_out, x)

    @staticmethod
    def backward(ctx, grad_out):
        x, saved_grad_out = ctx.saved_tensors
        return cube_backward_backward_grad_out(grad_out, x), cube_backward_backward(grad_out, saved_grad_out, x)
