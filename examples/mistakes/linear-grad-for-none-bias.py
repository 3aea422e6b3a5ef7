# exercise: linear
# mistake: returns a bias gradient even when bias is None (not a tensor)
# expect: forward=pass first-order=gradient_for_non_tensor second-order=gradient_for_non_tensor structure=gradient_for_non_tensor
# caught-by: gradcheck
class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight)
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
        grad_bias = grad_output.sum(0)  # even when bias is None
        return grad_input, grad_weight, grad_bias
