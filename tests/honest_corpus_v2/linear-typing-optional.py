# exercise: linear
# style: type-annotated staticmethods (typing.Optional and Tuple, torch.Tensor), `from typing import Any` for ctx, as torch's own typed Functions write them; early return when no gradient is needed at all
# source: the annotated signatures of https://pytorch.org/docs/stable/notes/extending.func.html (def forward(x: Tensor, ...) / setup_context(ctx, inputs, output)) and pytorch/pytorch:torch/autograd/function.py's typing
from typing import Any, Optional, Tuple


class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, input: torch.Tensor, weight: torch.Tensor,
                bias: Optional[torch.Tensor] = None) -> torch.Tensor:
        ctx.save_for_backward(input, weight)
        ctx.has_bias = bias is not None
        output = torch.mm(input, weight.t())
        if bias is not None:
            output = output + bias
        return output

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        if not any(ctx.needs_input_grad):
            return None, None, None
        input, weight = ctx.saved_tensors
        grad_input: Optional[torch.Tensor] = None
        grad_weight: Optional[torch.Tensor] = None
        grad_bias: Optional[torch.Tensor] = None
        if ctx.needs_input_grad[0]:
            grad_input = torch.mm(grad_output, weight)
        if ctx.needs_input_grad[1]:
            grad_weight = torch.mm(grad_output.t(), input)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias
