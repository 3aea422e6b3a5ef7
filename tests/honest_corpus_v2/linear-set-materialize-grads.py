# exercise: linear
# style: ctx.set_materialize_grads(False) in forward and a backward that checks grad_output for None first (the docs' pattern for non-materialized gradients), then the docs' LinearFunction
# source: https://pytorch.org/docs/stable/generated/torch.autograd.function.FunctionCtx.set_materialize_grads.html ("We must check for None now") and https://pytorch.org/docs/stable/notes/extending.html
class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(input, weight)
        ctx.has_bias = bias is not None
        output = input.mm(weight.t())
        if bias is not None:
            output = output + bias
        return output

    @staticmethod
    def backward(ctx, grad_output):
        if grad_output is None:  # We must check for None now
            return None, None, None
        input, weight = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias
