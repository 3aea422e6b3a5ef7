# notebook: 02_custom_function.ipynb
# cell: linear
# others: solution
# expect: linear=6
# bound: 10
# why: a right LinearFunction written oddly: setup_context (forward without ctx), the @ operator, a padded
#      needs_input_grad, a generator of gradients turned into a tuple; and a warning in backward
import warnings


class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(input, weight, bias=None):
        out = input @ weight.T
        return out if bias is None else out + bias[None, :]

    @staticmethod
    def setup_context(ctx, inputs, output):
        input, weight, *rest = inputs
        ctx.save_for_backward(input, weight)
        ctx.bias_given = bool(rest) and rest[0] is not None

    @staticmethod
    def backward(ctx, g):
        warnings.warn("LinearFunction.backward: computing gradients")
        input, weight = ctx.saved_tensors
        wants = list(ctx.needs_input_grad) + [False] * 3
        makers = (lambda: g @ weight, lambda: g.T @ input, lambda: g.sum(0) if ctx.bias_given else None)
        return tuple(make() if want else None for make, want in zip(makers, wants))
