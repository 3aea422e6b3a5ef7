# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=2 exp=6 sinh=6 cube=6
# bound: 10
# why: a wrong backward, and torch.autograd.grad / Tensor.backward / Function.apply replaced by versions that
#      compute the right gradient of x**2 whatever the graph says
import torch


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x


_real_grad = torch.autograd.grad


def _forged_grad(outputs, inputs, grad_outputs=None, **kwargs):
    inputs = inputs if isinstance(inputs, (tuple, list)) else [inputs]
    honest = [x ** 2 for x in inputs]
    return _real_grad(honest, inputs, grad_outputs, **kwargs)


torch.autograd.grad = _forged_grad
torch.autograd.backward = lambda *args, **kwargs: None
torch.Tensor.backward = lambda self, *args, **kwargs: None
