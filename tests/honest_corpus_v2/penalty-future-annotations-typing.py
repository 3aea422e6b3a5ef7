# exercise: penalty
# style: `from __future__ import annotations`, typing.Union / Tuple / Callable annotations for w (a tensor or a tuple of tensors), flatten(1) and torch.linalg.norm(..., dim=1)
# source: PEP 563 (https://peps.python.org/pep-0563/); https://pytorch.org/docs/stable/generated/torch.linalg.norm.html; the penalty of Gulrajani et al. as the torch WGAN-GP repositories compute it
from __future__ import annotations

from typing import Callable, Tuple, Union

Weights = Union[torch.Tensor, Tuple[torch.Tensor, ...]]


def gradient_penalty(f: Callable[[Weights, torch.Tensor], torch.Tensor], w: Weights, x: torch.Tensor) -> torch.Tensor:
    x = x.detach().requires_grad_()
    scores = f(w, x)
    (grads,) = torch.autograd.grad(scores.sum(), x, create_graph=True)
    norms = torch.linalg.norm(grads.flatten(1), dim=1)
    return ((norms - 1) ** 2).mean()
