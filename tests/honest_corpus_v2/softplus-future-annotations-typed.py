# exercise: softplus
# style: `from __future__ import annotations`, typed staticmethods as torch/autograd/function.py types them (ctx: Any, inputs: Tuple[Any, ...]), the stable formula written with method chaining (x.clamp(min=0) + (-x.abs()).exp().log1p())
# source: PEP 563 (https://peps.python.org/pep-0563/); pytorch/pytorch:torch/autograd/function.py (setup_context(ctx: Any, inputs: Tuple[Any, ...], output: Any)); https://pytorch.org/docs/stable/notes/extending.func.html
from __future__ import annotations

from typing import Any, Tuple


class Softplus(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x.clamp(min=0) + (-x.abs()).exp().log1p()

    @staticmethod
    def setup_context(ctx: Any, inputs: Tuple[Any, ...], output: Any) -> None:
        (x,) = inputs
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * x.sigmoid()

    @staticmethod
    def jvp(ctx: Any, x_t: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return x_t * x.sigmoid()
