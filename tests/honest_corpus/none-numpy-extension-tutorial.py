# exercise: none
# style: the "Creating Extensions Using NumPy and SciPy" tutorial's BadFFTFunction: numpy.fft in forward and backward, input.new(result), abs() builtin, prints of the result and of the input after backward
# source: https://pytorch.org/tutorials/advanced/numpy_extensions_tutorial.html (pytorch/tutorials:advanced_source/numpy_extensions_tutorial.py, "Parameter-less example")
# notebook: 03_double_backward.ipynb
import torch
from torch.autograd import Function
from numpy.fft import rfft2, irfft2


class BadFFTFunction(Function):
    @staticmethod
    def forward(ctx, input):
        numpy_input = input.detach().numpy()
        result = abs(rfft2(numpy_input))
        return input.new(result)

    @staticmethod
    def backward(ctx, grad_output):
        numpy_go = grad_output.numpy()
        result = irfft2(numpy_go)
        return grad_output.new(result)

# since this layer does not have any parameters, we can
# simply declare this as a function, rather than as an ``nn.Module`` class


def incorrect_fft(input):
    return BadFFTFunction.apply(input)

input = torch.randn(8, 8, requires_grad=True)
result = incorrect_fft(input)
print(result)
result.backward(torch.randn(result.size()))
print(input)
