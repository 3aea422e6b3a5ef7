# exercise: softplus
# mistake: forward picks a formula with a Python `if` on the tensor's values (the naive one unless some x is large): fine on one tensor, but vmap cannot branch on batched values
# expect: forward=pass first-order=pass second-order=pass structure=pass forward-mode=pass vmap=not_vmap_compatible
# caught-by: neither
class Softplus(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        if x.abs().max() > 20:
            return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))
        return torch.log1p(torch.exp(x))

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
        return x_t * torch.sigmoid(x)
