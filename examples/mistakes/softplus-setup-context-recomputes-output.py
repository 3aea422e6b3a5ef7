# exercise: softplus
# mistake: setup_context computes softplus(x) again and saves that tensor instead of its `output` argument; backward computes sigmoid(x) = 1 - e^(-y) from it: right values, but the recomputed y has no graph, so the second derivative is missing
# expect: forward=pass first-order=pass second-order=intermediates_not_outputs structure=pass forward-mode=pass vmap=pass
# caught-by: gradgradcheck
# seen: https://github.com/pytorch/pytorch/issues/104040
class Softplus(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        y = torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))
        ctx.save_for_backward(y)
        ctx.save_for_forward(y)

    @staticmethod
    def backward(ctx, grad_output):
        y, = ctx.saved_tensors
        return grad_output * -torch.expm1(-y)

    @staticmethod
    def jvp(ctx, x_t):
        y, = ctx.saved_tensors
        return x_t * -torch.expm1(-y)
