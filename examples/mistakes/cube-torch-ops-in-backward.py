# exercise: cube
# mistake: Cube.backward computes grad_out * 3x² with PyTorch ops instead of CubeBackward.apply: every derivative is right, only the exercise's structure is not
# expect: forward=pass first-order=pass second-order=pass structure=derivatives_right_not_through_function
# caught-by: neither
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return cube_forward(x)

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * 3 * x ** 2


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
