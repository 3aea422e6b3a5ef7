# exercise: softplus
# mistake: no jvp staticmethod: forward mode (torch.func.jvp, dual tensors) cannot go through the Function
# expect: forward=pass first-order=pass second-order=pass structure=pass forward-mode=jvp_not_implemented vmap=pass
# caught-by: neither
# seen: https://github.com/flatironinstitute/pytorch-finufft/issues/110
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
