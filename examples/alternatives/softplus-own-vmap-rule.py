# exercise: softplus
# style: a hand-written vmap staticmethod instead of generate_vmap_rule: softplus is elementwise, so the batched call is the Function itself on the whole batch, with the batch dimension where it came in
class Softplus(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return torch.where(x > 0, x + torch.log1p(torch.exp(-x)), torch.log1p(torch.exp(x)))

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

    @staticmethod
    def vmap(info, in_dims, x):
        return Softplus.apply(x), in_dims[0]
