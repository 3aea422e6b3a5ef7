# exercise: linear
# style: forward as PyTorch 1.x's F.linear wrote it (torch.addmm(bias, input, weight.t()) for 2-D input with bias, else input.matmul(weight.t())), backward with torch.matmul and needs_input_grad unpacked into names
# source: pytorch/pytorch v1.4.0:torch/nn/functional.py (def linear: "if input.dim() == 2 and bias is not None: ret = torch.addmm(bias, input, weight.t())")
class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight)
        ctx.has_bias = bias is not None
        if input.dim() == 2 and bias is not None:
            # fused op is marginally faster
            ret = torch.addmm(bias, input, weight.t())
        else:
            output = input.matmul(weight.t())
            if bias is not None:
                output += bias
            ret = output
        return ret

    @staticmethod
    def backward(ctx, grad_output):
        input, weight = ctx.saved_tensors
        needs_input, needs_weight = ctx.needs_input_grad[:2]
        grad_input = torch.matmul(grad_output, weight) if needs_input else None
        grad_weight = torch.matmul(grad_output.t(), input) if needs_weight else None
        grad_bias = None
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(dim=0)
        return grad_input, grad_weight, grad_bias
