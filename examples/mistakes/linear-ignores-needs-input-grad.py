# exercise: linear
# mistake: computes every gradient even when an input does not require grad (ctx.needs_input_grad ignored)
# expect: forward=pass first-order=pass second-order=pass structure=needs_input_grad_ignored
# caught-by: neither
class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight)
        ctx.has_bias = bias is not None
        output = input @ weight.t()
        if bias is not None:
            output = output + bias
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight = ctx.saved_tensors
        grad_bias = grad_output.sum(0) if ctx.has_bias else None
        return grad_output @ weight, grad_output.t() @ input, grad_bias
