# exercise: hvp
# style: `from __future__ import annotations`, Callable annotations, the double-backward hvp with torch.dot(g, v) as the scalar to differentiate again, hvp_forward with functools.partial-free torch.func composition
# source: PEP 563 (https://peps.python.org/pep-0563/); the double-backward hvp of https://pytorch.org/docs/stable/notes/autograd.html (create_graph=True) with https://pytorch.org/docs/stable/generated/torch.dot.html; https://pytorch.org/tutorials/intermediate/jacobians_hessians.html
from __future__ import annotations

from typing import Callable

Fn = Callable[[torch.Tensor], torch.Tensor]


def hvp(f: Fn, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    x = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(f(x), x, create_graph=True)
    (hv,) = torch.autograd.grad(torch.dot(g, v), x)
    return hv


def hvp_forward(f: Fn, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    grad_f = torch.func.grad(f)
    _, tangent_out = torch.func.jvp(grad_f, (x,), (v,))
    return tangent_out
