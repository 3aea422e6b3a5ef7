# exercise: linear
# mistake: returns (grad_weight, grad_input, grad_bias): gradients in the wrong order
# expect: forward=pass first-order=gradients_in_wrong_order second-order=gradients_in_wrong_order structure=gradients_in_wrong_order
# caught-by: gradcheck
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
        return grad_output.t() @ input, grad_output @ weight, grad_bias
