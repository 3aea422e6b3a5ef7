# exercise: softplus
# mistake: written in the classic style (forward takes ctx, no setup_context), as in notebooks 2 and 3: autograd and dual tensors work, torch.func does not
# expect: forward=pass first-order=pass second-order=pass structure=forward_takes_ctx forward-mode=needs_setup_context vmap=needs_setup_context
# caught-by: neither
class Softplus(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return grad_output * torch.sigmoid(x)

    @staticmethod
    def jvp(ctx, x_t):
        x, = ctx.saved_tensors
        return x_t * torch.sigmoid(x)
