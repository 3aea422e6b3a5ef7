# exercise: cube
# style: notebook 3's Cube / CubeBackward followed by a look at the graph double backward builds: the first gradient's grad_fn (CubeBackwardBackward) and its next_functions, printed
# source: https://pytorch.org/tutorials/beginner/blitz/autograd_tutorial.html and https://pytorch.org/docs/stable/notes/autograd.html (grad_fn.next_functions walks the graph)
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
        return cube_backward_backward_grad_out(grad_out, x), cube_backward_backward(grad_out, sav_grad_out, x)


x = torch.tensor([1.0, 2.0], dtype=torch.double, requires_grad=True)
g, = torch.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
print(g.grad_fn)
print(g.grad_fn.next_functions)
