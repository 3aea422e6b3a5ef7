# exercise: softplus
# mistake: forward computes log(1 + eˣ) as written: eˣ overflows to inf for large x (above 709 in float64, 88 in float32)
# expect: forward=forward_overflow first-order=pass second-order=pass structure=pass forward-mode=pass vmap=pass
# caught-by: neither
# seen: https://github.com/rushter/MLAlgorithms/pull/30
class Softplus(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return torch.log(1 + torch.exp(x))

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
