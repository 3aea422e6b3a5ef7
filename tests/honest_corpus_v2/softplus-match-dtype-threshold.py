# exercise: softplus
# style: a `match` on x.dtype (value patterns torch.float32 / torch.float64) picking the threshold above which softplus(x) == x in that precision, then torch.where; sigmoid derivatives; generate_vmap_rule
# source: https://peps.python.org/pep-0636/ (matching dotted names as value patterns); torch.nn.Softplus's threshold (https://pytorch.org/docs/stable/generated/torch.nn.Softplus.html)
class Softplus(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        match x.dtype:
            case torch.float64:
                threshold = 40.0
            case torch.float32:
                threshold = 20.0
            case _:
                threshold = 10.0
        safe = torch.clamp(x, max=threshold)
        return torch.where(x > threshold, x, torch.log1p(torch.exp(safe)))

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
