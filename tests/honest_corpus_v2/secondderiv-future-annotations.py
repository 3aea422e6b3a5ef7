# exercise: secondderiv
# style: `from __future__ import annotations`, Callable annotations, keyword arguments for every autograd.grad call, the intermediate named first_derivative
# source: PEP 563 (https://peps.python.org/pep-0563/); torch.autograd.grad's keyword form (https://pytorch.org/docs/stable/generated/torch.autograd.grad.html)
from __future__ import annotations

from typing import Callable


def second_derivative(f: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    y = f(x)
    first_derivative = torch.autograd.grad(outputs=y, inputs=x, grad_outputs=torch.ones_like(y), create_graph=True)[0]
    return torch.autograd.grad(outputs=first_derivative, inputs=x, grad_outputs=torch.ones_like(first_derivative))[0]
