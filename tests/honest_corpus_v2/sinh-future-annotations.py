# exercise: sinh
# style: `from __future__ import annotations`, a Tuple[Tensor, Tensor, Tensor] return annotation on forward, `from torch import Tensor`, the derivative written with torch.add / torch.sub method chains
# source: PEP 563 (https://peps.python.org/pep-0563/); the typed Functions of https://pytorch.org/docs/stable/notes/extending.func.html; the tutorial's Sinh
from __future__ import annotations

from typing import Tuple

from torch import Tensor


class Sinh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        expx = torch.exp(x)
        expnegx = torch.exp(-x)
        ctx.save_for_backward(expx, expnegx)
        return (expx - expnegx) / 2, expx, expnegx

    @staticmethod
    def backward(ctx, grad_out: Tensor, grad_expx: Tensor, grad_expnegx: Tensor) -> Tensor:
        expx, expnegx = ctx.saved_tensors
        cosh = torch.add(expx, expnegx).div(2)
        return torch.add(grad_out * cosh, grad_expx * expx).sub(grad_expnegx * expnegx)


def sinh(x: Tensor) -> Tensor:
    return Sinh.apply(x)[0]
