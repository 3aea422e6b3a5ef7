# exercise: linear
# style: `import logging` in the student's own cell above the answer and a logger.debug of the shapes in forward (the logging HOWTO's lazy %-formatting); otherwise the docs' LinearFunction with a two-line needs_input_grad unpacking
# source: https://docs.python.org/3/howto/logging.html and https://pytorch.org/docs/stable/notes/extending.html (LinearFunction)
# %% cell: before
import logging

logger = logging.getLogger(__name__)
# %% cell: answer
class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        logger.debug("LinearFunction.forward: input %s weight %s bias %s", input.shape, weight.shape,
                     None if bias is None else bias.shape)
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
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias
