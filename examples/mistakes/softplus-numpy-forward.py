# exercise: softplus
# mistake: forward computes with NumPy's stable np.logaddexp (as notebook 3's Cube did) while promising generate_vmap_rule = True: vmap cannot run NumPy on batched tensors
# expect: forward=pass first-order=pass second-order=pass structure=pass forward-mode=pass vmap=not_vmap_compatible
# caught-by: neither
class Softplus(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return torch.from_numpy(np.asarray(np.logaddexp(x.detach().numpy(), 0.0)))

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
