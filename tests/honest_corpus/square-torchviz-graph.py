# exercise: square
# style: the tutorial's Square followed by its torchviz cell (make_dot of grad_x, x, out), the graph left as the cell's last expression so Jupyter renders it
# source: https://pytorch.org/tutorials/intermediate/custom_function_double_backward_tutorial.html ("We can use torchviz to visualize the graph")
import torch
import torchviz

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * 2 * x

x = torch.tensor(1., requires_grad=True).clone()
out = Square.apply(x)
grad_x, = torch.autograd.grad(out, x, create_graph=True)
torchviz.make_dot((grad_x, x, out), {"grad_x": grad_x, "x": x, "out": out})
