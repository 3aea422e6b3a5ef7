# exercise: linear
# mistake: backward reads ctx.needs_input_grad[2] before checking that a bias was passed: LinearFunction.apply(x, w) raises IndexError
# expect: forward=pass first-order=raised_error second-order=raised_error structure=raised_error
# caught-by: neither
class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight)
        ctx.has_bias = bias is not None
        output = input.mm(weight.t())
        if bias is not None:
            output = output + bias
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if ctx.needs_input_grad[2] and ctx.has_bias:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias
