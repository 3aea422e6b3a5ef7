# exercise: vjp
# style: `from __future__ import annotations` at the top of the answer cell, typing.Callable and torch.Tensor annotations on the signature and on a local, a docstring one line long
# source: PEP 563 (https://peps.python.org/pep-0563/) as used across torch's own sources (e.g. pytorch/pytorch:torch/autograd/functional.py's annotated signatures)
from __future__ import annotations

from typing import Callable


def vector_jacobian_product(f: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """vᵀJ of f at x."""
    out: torch.Tensor = f(x)
    return torch.autograd.grad(out, x, grad_outputs=v)[0]
