# exercise: linear
# mistake: ctx.needs_input_grad[0] and [1] swapped (invisible to gradcheck when every input requires grad)
# expect: forward=pass first-order=pass second-order=pass structure=needs_input_grad_wrong
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
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[1]:
            grad_input = grad_output @ weight
        if ctx.needs_input_grad[0]:
            grad_weight = grad_output.t() @ input
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias
