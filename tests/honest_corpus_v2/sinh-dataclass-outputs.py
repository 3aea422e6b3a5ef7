# exercise: sinh
# style: a frozen @dataclass naming the three outputs for the reader of the wrapper (SinhOutputs(value, expx, expnegx)), built from apply's tuple with *; torch.sinh used in a check after the class
# source: https://docs.python.org/3/library/dataclasses.html (frozen=True); the tutorial's Sinh (https://pytorch.org/tutorials/intermediate/custom_function_double_backward_tutorial.html)
from dataclasses import dataclass


@dataclass(frozen=True)
class SinhOutputs:
    value: torch.Tensor
    expx: torch.Tensor
    expnegx: torch.Tensor


class Sinh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        expx = torch.exp(x)
        expnegx = torch.exp(-x)
        ctx.save_for_backward(expx, expnegx)
        return (expx - expnegx) / 2, expx, expnegx

    @staticmethod
    def backward(ctx, grad_out, grad_expx, grad_expnegx):
        expx, expnegx = ctx.saved_tensors
        grad_input = grad_out * (expx + expnegx) / 2
        grad_input += grad_expx * expx
        grad_input -= grad_expnegx * expnegx
        return grad_input


def sinh(x):
    return SinhOutputs(*Sinh.apply(x)).value


t = torch.linspace(-1, 1, 5, dtype=torch.double)
assert torch.allclose(sinh(t), torch.sinh(t))
