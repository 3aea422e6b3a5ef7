# exercise: cube
# style: CubeBackward.backward computes each gradient only when ctx.needs_input_grad asks for it (None otherwise), the helpers' results kept in named locals
# source: https://pytorch.org/docs/stable/notes/extending.html (needs_input_grad) and the tutorial's CubeBackward
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
        x, sav_grad_out = ctx.saved_tensors
        need_grad_out, need_x = ctx.needs_input_grad
        d_grad_out = cube_backward_backward_grad_out(grad_out, x) if need_grad_out else None
        d_x = cube_backward_backward(grad_out, sav_grad_out, x) if need_x else None
        return d_grad_out, d_x
