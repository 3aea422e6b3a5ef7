# exercise: linear
# style: private-looking ctx attributes set in forward (`ctx._has_bias = ...`, `ctx._saved_shape = ...`) as many repositories name them, read back in backward; the input's shape kept only for an assert
# source: the DequantizeAndLinear Function of the 8-bit GPT-J fine-tuning code (hivemind's frozen-8-bit notebook, copied into many repositories: "ctx._has_bias = bias is not None", read in backward as "if ctx._has_bias"), another repository's Triton linear Function ("ctx._x_shape = x_shape"); the docs' LinearFunction otherwise (https://pytorch.org/docs/stable/notes/extending.html)
class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight)
        ctx._has_bias = bias is not None
        ctx._saved_shape = input.shape
        output = input.mm(weight.t())
        if bias is not None:
            output = output + bias
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight = ctx.saved_tensors
        assert input.shape == ctx._saved_shape
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if ctx._has_bias and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias
