# exercise: exp
# style: the torch.func docs' typed setup_context signature (ctx, inputs: Tuple[Any, ...], output: Any) with `from typing import Any, Tuple`, the output saved in setup_context, x.exp() as a method
# source: https://pytorch.org/docs/stable/notes/extending.func.html ("def setup_context(ctx, inputs, output)") and pytorch/pytorch:torch/autograd/function.py (def setup_context(ctx: Any, inputs: Tuple[Any, ...], output: Any) -> Any)
from typing import Any, Tuple


class Exp(torch.autograd.Function):
    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x.exp()

    @staticmethod
    def setup_context(ctx: Any, inputs: Tuple[Any, ...], output: Any) -> Any:
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        result, = ctx.saved_tensors
        return grad_output * result
