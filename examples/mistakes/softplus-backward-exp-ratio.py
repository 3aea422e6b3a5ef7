# exercise: softplus
# mistake: backward writes the derivative as eˣ / (1 + eˣ): inf / inf = nan for large x, where sigmoid(x) is 1
# expect: forward=pass first-order=gradient_overflow second-order=first_order_wrong_before_second structure=pass forward-mode=pass vmap=pass
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
        return grad_output * torch.exp(x) / (1 + torch.exp(x))

    @staticmethod
    def jvp(ctx, x_t):
        x, = ctx.saved_tensors
        return x_t * torch.sigmoid(x)
