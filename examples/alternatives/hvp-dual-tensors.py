# exercise: hvp
# style: hvp by torch.autograd.grad twice with the grad_outputs keyword; hvp_forward by forward-over-reverse with forward_ad dual tensors: the tangent of the gradient of f at x + ε v is H v
import torch.autograd.forward_ad as fwAD


def hvp(f, x, v):
    x = x.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(outputs=f(x), inputs=x, create_graph=True)
    (hv,) = torch.autograd.grad(outputs=g, inputs=x, grad_outputs=v)
    return hv


def hvp_forward(f, x, v):
    with fwAD.dual_level():
        primal = x.detach().requires_grad_(True)
        dual = fwAD.make_dual(primal, v)
        (g,) = torch.autograd.grad(f(dual), primal)
        return fwAD.unpack_dual(g).tangent
