# exercise: softplus
# style: the identity softplus(x) = -logsigmoid(-x) with torch.nn.functional.logsigmoid (imported as F), the derivative written as F.sigmoid and the tangent as torch.mul
# source: https://pytorch.org/docs/stable/generated/torch.nn.functional.logsigmoid.html (LogSigmoid(x) = log(1 / (1 + exp(-x)))) and https://pytorch.org/docs/stable/notes/extending.func.html
import torch.nn.functional as F


class Softplus(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return -F.logsigmoid(-x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return grad_output * F.sigmoid(x)

    @staticmethod
    def jvp(ctx, x_t):
        x, = ctx.saved_tensors
        return torch.mul(x_t, F.sigmoid(x))
