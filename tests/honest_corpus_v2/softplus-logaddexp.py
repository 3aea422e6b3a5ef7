# exercise: softplus
# style: softplus as torch.logaddexp(x, 0) (log(e^x + e^0), computed stably by PyTorch), the zero made with torch.zeros_like; backward and jvp with sigmoid
# source: https://pytorch.org/docs/stable/generated/torch.logaddexp.html ("log(exp(x) + exp(y)) ... useful in statistics where the calculated probabilities of events may be so small") and https://pytorch.org/docs/stable/notes/extending.func.html (generate_vmap_rule)
class Softplus(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return torch.logaddexp(x, torch.zeros_like(x))

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
