# exercise: linear
# style: a 2017 gist of the docs' Linear (class named Linear, a print('hello') in backward); renamed LinearFunction, ctx.saved_variables (removed from PyTorch) read as ctx.saved_tensors, and the bias gradient's .squeeze(0) dropped (written for PyTorch 0.2, whose sum(0) kept the summed dimension; today it would squeeze a (1,) bias gradient to ())
# source: https://gist.github.com/anonymous/866455c6bdb88403d23d8c862b3b9233
import torch
from torch.autograd import Variable, Function

class LinearFunction(Function):
    # Note that both forward and backward are @staticmethods
    @staticmethod
    # bias is an optional argument
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    # This function has only a single output, so it gets only one gradient
    @staticmethod
    def backward(ctx, grad_output):
        print('hello')
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias

linear = LinearFunction.apply
