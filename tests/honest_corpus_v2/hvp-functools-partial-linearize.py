# exercise: hvp
# style: functools.partial to fix the function in a reusable grad-of-f helper, hvp by autograd.grad with grad_outputs, hvp_forward by torch.func.jvp of that helper; keyword arguments throughout
# source: https://docs.python.org/3/library/functools.html#functools.partial and the torch.func tutorial's "_ = torch.manual_seed(0)" / partial style (https://pytorch.org/tutorials/intermediate/jacobians_hessians.html)
import functools


def _gradient(f, x):
    return torch.func.grad(f)(x)


def hvp(f, x, v):
    x = x.detach().requires_grad_(True)
    grad_f = torch.autograd.grad(outputs=f(x), inputs=x, create_graph=True)[0]
    return torch.autograd.grad(outputs=grad_f, inputs=x, grad_outputs=v)[0]


def hvp_forward(f, x, v):
    grad_of_f = functools.partial(_gradient, f)
    return torch.func.jvp(grad_of_f, primals=(x,), tangents=(v,))[1]
