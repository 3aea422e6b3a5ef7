# exercise: softplus
# style: torch.nn.Softplus's threshold rule written with torch.where (x itself above 20, log1p(exp(x)) below; the overflowing branch is discarded by where and never differentiated: backward is the Function's own), sigmoid in backward and jvp, generate_vmap_rule
# source: https://pytorch.org/docs/stable/generated/torch.nn.Softplus.html ("For numerical stability the implementation reverts to the linear function when input × β > threshold", threshold=20) and https://pytorch.org/docs/stable/generated/torch.where.html
class Softplus(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return torch.where(x > 20, x, torch.log1p(torch.exp(x)))

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
