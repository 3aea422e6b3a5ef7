# exercise: softplus
# mistake: generate_vmap_rule left out (and no vmap staticmethod): torch.func.vmap refuses the Function
# expect: forward=pass first-order=pass second-order=pass structure=pass forward-mode=pass vmap=no_vmap_rule
# caught-by: neither
class Softplus(torch.autograd.Function):
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
        return x_t * torch.sigmoid(x)
