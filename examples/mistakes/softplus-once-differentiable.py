# exercise: softplus
# mistake: backward decorated with @once_differentiable (as custom Functions often are): the gradient has no graph, so the second derivative is silently missing
# expect: forward=pass first-order=pass second-order=once_differentiable structure=pass forward-mode=pass vmap=pass
# caught-by: gradgradcheck
# seen: https://github.com/pytorch/pytorch/pull/60312
from torch.autograd.function import once_differentiable


class Softplus(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return grad_output * torch.sigmoid(x)

    @staticmethod
    def jvp(ctx, x_t):
        x, = ctx.saved_tensors
        return x_t * torch.sigmoid(x)
