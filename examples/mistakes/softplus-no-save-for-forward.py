# exercise: softplus
# mistake: setup_context saves x with save_for_backward only: inside jvp, ctx.saved_tensors is empty
# expect: forward=pass first-order=pass second-order=pass structure=pass forward-mode=jvp_not_saved_for_forward vmap=pass
# caught-by: neither
# seen: https://github.com/pytorch/pytorch/issues/121084
class Softplus(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return grad_output * torch.sigmoid(x)

    @staticmethod
    def jvp(ctx, x_t):
        x, = ctx.saved_tensors
        return x_t * torch.sigmoid(x)
