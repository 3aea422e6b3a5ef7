# exercise: linear
# mistake: grad_bias is grad_output itself, not summed over the batch (the engine sums it silently; gradcheck passes)
# expect: forward=pass first-order=gradient_not_reduced second-order=pass structure=pass
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
        if ctx.needs_input_grad[0]:
            grad_input = grad_output @ weight
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t() @ input
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = grad_output
        return grad_input, grad_weight, grad_bias
