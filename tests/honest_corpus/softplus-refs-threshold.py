# exercise: softplus
# style: softplus as PyTorch's own reference implementation writes it (torch._refs: where(x > threshold, x, log1p(exp(x)))), its derivative as derivatives.yaml's softplus_backward (grad * sigmoid(x)), in the setup_context style with private helpers
# source: pytorch/pytorch:torch/_refs/nn/functional/__init__.py (softplus); pytorch/pytorch:tools/autograd/derivatives.yaml (softplus_backward); https://pytorch.org/docs/stable/notes/extending.func.html
_THRESHOLD = 20.0


def _softplus(x, threshold=_THRESHOLD):
    rhs = torch.log1p(torch.exp(x))
    return torch.where(x > threshold, x, rhs)


def _softplus_derivative(x):
    return torch.sigmoid(x)


class Softplus(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return _softplus(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return grad_output * _softplus_derivative(x)

    @staticmethod
    def jvp(ctx, x_t):
        x, = ctx.saved_tensors
        return x_t * _softplus_derivative(x)
