# exercise: linear
# style: the setup_context style with torch.einsum in forward and backward ("bi,oi->bo"), inputs unpacked with a starred default for the missing bias
# source: https://pytorch.org/docs/stable/notes/extending.html (LinearFunction, "Combined or separate forward() and setup_context()") and https://pytorch.org/docs/stable/generated/torch.einsum.html
class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(input, weight, bias=None):
        output = torch.einsum("bi,oi->bo", input, weight)
        if bias is not None:
            output = output + bias
        return output

    @staticmethod
    def setup_context(ctx, inputs, output):
        input, weight, *rest = inputs
        bias = rest[0] if rest else None
        ctx.save_for_backward(input, weight)
        ctx.has_bias = bias is not None

    @staticmethod
    def backward(ctx, grad_output):
        input, weight = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = torch.einsum("bo,oi->bi", grad_output, weight)
        if ctx.needs_input_grad[1]:
            grad_weight = torch.einsum("bo,bi->oi", grad_output, input)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = torch.einsum("bo->o", grad_output)
        return grad_input, grad_weight, grad_bias
