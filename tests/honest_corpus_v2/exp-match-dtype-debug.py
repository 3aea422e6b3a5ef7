# exercise: exp
# style: a `match` on the input's dtype (value patterns torch.float32 / torch.float64, a wildcard) choosing the tolerance of a sanity assert after the class; the Function itself as the tutorial writes it
# source: https://peps.python.org/pep-0636/ (value patterns: dotted names) and the tutorial's Exp (https://pytorch.org/tutorials/intermediate/custom_function_double_backward_tutorial.html)
class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = torch.exp(x)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_out):
        result, = ctx.saved_tensors
        return grad_out * result


def tolerance(dtype):
    match dtype:
        case torch.float32:
            return 1e-5
        case torch.float64:
            return 1e-12
        case _:
            return 1e-2


x = torch.linspace(-2, 2, 9, dtype=torch.float64)
assert torch.allclose(Exp.apply(x), torch.exp(x), rtol=tolerance(x.dtype))
