# exercise: softplus
# mistake: jvp returns the derivative sigmoid(x) itself, not the tangent pushed through it (x_t * sigmoid(x))
# expect: forward=pass first-order=pass second-order=pass structure=pass forward-mode=jvp_ignores_tangent vmap=pass
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
        return grad_output * torch.sigmoid(x)

    @staticmethod
    def jvp(ctx, x_t):
        x, = ctx.saved_tensors
        return torch.sigmoid(x)
