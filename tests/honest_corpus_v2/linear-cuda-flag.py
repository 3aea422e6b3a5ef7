# exercise: linear
# style: PyTorch-GAN's `cuda = True if torch.cuda.is_available() else False` flag at the top of the cell (and its Tensor alias), the Function written with @ and .t(), bias gradient only when a bias came
# source: eriklindernoren/PyTorch-GAN:implementations/wgan_gp/wgan_gp.py ("cuda = True if torch.cuda.is_available() else False", "Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor")
cuda = True if torch.cuda.is_available() else False


class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight)
        ctx.has_bias = bias is not None
        out = input @ weight.t()
        return out + bias if bias is not None else out

    @staticmethod
    def backward(ctx, grad_output):
        input, weight = ctx.saved_tensors
        grad_input = grad_output @ weight if ctx.needs_input_grad[0] else None
        grad_weight = grad_output.t() @ input if ctx.needs_input_grad[1] else None
        grad_bias = grad_output.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return grad_input, grad_weight, grad_bias
