# exercise: sortvalues
# style: typing annotations (Tuple[Tensor, Tensor], Any for ctx), torch.sort(..., stable=True) by keyword, the integer permutation saved and the gradient scattered with Tensor.scatter on zeros_like
# source: https://pytorch.org/docs/stable/generated/torch.sort.html (stable=True keeps the order of equal elements) and https://pytorch.org/docs/stable/notes/extending.func.html
from typing import Any, Tuple

from torch import Tensor


class SortValues(torch.autograd.Function):
    @staticmethod
    def forward(x: Tensor) -> Tuple[Tensor, Tensor]:
        values, indices = torch.sort(x, dim=-1, stable=True)
        return values, indices.to(dtype=x.dtype)

    @staticmethod
    def setup_context(ctx: Any, inputs: Tuple[Any, ...], output: Tuple[Tensor, Tensor]) -> None:
        _, indices = output
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices.to(torch.int64))

    @staticmethod
    def backward(ctx: Any, grad_values: Tensor, grad_indices: Tensor) -> Tensor:
        (indices,) = ctx.saved_tensors
        return torch.zeros_like(grad_values).scatter(dim=-1, index=indices, src=grad_values)
