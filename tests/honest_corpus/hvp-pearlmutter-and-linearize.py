# exercise: hvp
# style: a repository's "Pearlmutter trick" hvp (assert on numel, grad imported from torch.autograd, (v * grad_f).sum() differentiated again) on a leaf of its own; hvp_forward by torch.func.linearize of the gradient (its docs: linearize returns (output, jvp_fn))
# source: public code found by exact search for "Hessian multiplication routine (Pearlmutter trick)" (hvp(f: Tensor, x: Tensor, v: Tensor)); https://pytorch.org/docs/stable/generated/torch.func.linearize.html
"""Hessian multiplication routine (Pearlmutter trick)."""

from torch import Tensor
from torch.autograd import grad


def _hvp(f: Tensor, x: Tensor, v: Tensor) -> Tensor:
    r"""Multiply v with the Hessian of f w.r.t. x."""
    assert f.numel() == 1  # f must be a scalar-valued
    (grad_f,) = grad(f, x, create_graph=True)
    v_dot_grad_f = (v * grad_f).sum()
    (result,) = grad(v_dot_grad_f, x)
    return result


def hvp(f, x, v):
    x = x.detach().requires_grad_(True)
    return _hvp(f(x), x, v)


def hvp_forward(f, x, v):
    _, jvp_fn = torch.func.linearize(torch.func.grad(f), x)
    return jvp_fn(v)
