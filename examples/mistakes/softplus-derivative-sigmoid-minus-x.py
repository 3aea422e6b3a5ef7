# exercise: softplus
# mistake: the derivative written as 1 / (1 + eˣ) = sigmoid(−x) instead of eˣ / (1 + eˣ) = sigmoid(x), in backward and in jvp
# expect: forward=pass first-order=wrong_gradient second-order=first_order_wrong_before_second structure=pass forward-mode=jvp_wrong vmap=vmap_grad_wrong
# caught-by: gradcheck
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
        return grad_output * torch.sigmoid(-x)

    @staticmethod
    def jvp(ctx, x_t):
        x, = ctx.saved_tensors
        return x_t * torch.sigmoid(-x)
