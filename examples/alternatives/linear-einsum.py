# exercise: linear
# style: einsum everywhere, bias saved too (None is allowed in save_for_backward)
class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight, bias)
        output = torch.einsum("bi,oi->bo", input, weight)
        return output if bias is None else output + bias

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = torch.einsum("bo,oi->bi", grad_output, weight)
        if ctx.needs_input_grad[1]:
            grad_weight = torch.einsum("bo,bi->oi", grad_output, input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = torch.einsum("bo->o", grad_output)
        return grad_input, grad_weight, grad_bias
