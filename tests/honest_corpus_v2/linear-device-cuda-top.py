# exercise: linear
# style: `device = "cuda" if torch.cuda.is_available() else "cpu"` at the top of the cell (every PyTorch tutorial's first lines), the docs' LinearFunction after it, then a gradcheck on tensors made on that device
# source: https://pytorch.org/tutorials/beginner/basics/buildmodel_tutorial.html ("device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else \"cpu\"", earlier: "cuda" if torch.cuda.is_available()) and https://pytorch.org/docs/stable/notes/extending.html (LinearFunction)
device = "cuda" if torch.cuda.is_available() else "cpu"


class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight)
        ctx.has_bias = bias is not None
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


inputs = (torch.randn(4, 3, dtype=torch.double, device=device, requires_grad=True),
          torch.randn(2, 3, dtype=torch.double, device=device, requires_grad=True))
print(torch.autograd.gradcheck(LinearFunction.apply, inputs, eps=1e-6, atol=1e-4))
