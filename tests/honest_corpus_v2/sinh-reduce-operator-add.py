# exercise: sinh
# style: the three chain-rule terms collected in a list and summed with functools.reduce(operator.add, terms) (`import functools, operator` at the top of the cell); the wrapper unpacks `out, *_ = Sinh.apply(x)`
# source: https://docs.python.org/3/library/functools.html#functools.reduce and https://docs.python.org/3/library/operator.html#operator.add; the tutorial's Sinh
import functools
import operator


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
        terms = [grad_out * (expx + expnegx) / 2, grad_expx * expx, -grad_expnegx * expnegx]
        return functools.reduce(operator.add, terms)


def sinh(x):
    out, *_ = Sinh.apply(x)
    return out
