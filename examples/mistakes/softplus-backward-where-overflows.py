# exercise: softplus
# mistake: backward picks a stable formula with torch.where, but computes eˣ / (1 + eˣ) everywhere: for large x the unused branch is inf / inf = nan, harmless in the gradient, nan in the second derivative
# expect: forward=pass first-order=pass second-order=second_derivative_overflow structure=pass forward-mode=pass vmap=pass
# caught-by: neither
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
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return grad_output * torch.where(x > 0, 1 / (1 + torch.exp(-x)), torch.exp(x) / (1 + torch.exp(x)))

    @staticmethod
    def jvp(ctx, x_t):
        x, = ctx.saved_tensors
        return x_t * torch.sigmoid(x)
