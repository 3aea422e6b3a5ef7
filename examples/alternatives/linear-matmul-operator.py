# exercise: linear
# style: the @ operator and .T, with F.linear doing forward (forward is not recorded, so that is fine)
import torch.nn.functional as F


class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight)
        ctx.bias_given = bias is not None
        return F.linear(input, weight, bias)

    @staticmethod
    def backward(ctx, grad_output):
        input, weight = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_input = grad_output @ weight if needs[0] else None
        grad_weight = grad_output.T @ input if needs[1] else None
        grad_bias = grad_output.sum(dim=0) if ctx.bias_given and needs[2] else None
        return grad_input, grad_weight, grad_bias
