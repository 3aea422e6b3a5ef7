# exercise: softplus
# mistake: setup_context saves the output for jvp and the input for backward; jvp reads ctx.saved_tensors as if it held x, so it computes sigmoid(softplus(x))
# expect: forward=pass first-order=pass second-order=pass structure=pass forward-mode=jvp_wrong vmap=pass
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
        ctx.save_for_forward(output)

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return grad_output * torch.sigmoid(x)

    @staticmethod
    def jvp(ctx, x_t):
        x, = ctx.saved_tensors
        return x_t * torch.sigmoid(x)
