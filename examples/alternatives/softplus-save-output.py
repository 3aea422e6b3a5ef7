# exercise: softplus
# style: saves the output y instead of x, and uses sigmoid(x) = 1 − e^(−y) (as -expm1(-y), exact for tiny y) in backward and jvp; the output has a graph, so double backward works
class Softplus(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return torch.logaddexp(x, torch.zeros_like(x))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)
        ctx.save_for_forward(output)

    @staticmethod
    def backward(ctx, grad_output):
        y, = ctx.saved_tensors
        return grad_output * -torch.expm1(-y)

    @staticmethod
    def jvp(ctx, x_t):
        y, = ctx.saved_tensors
        return x_t * -torch.expm1(-y)
