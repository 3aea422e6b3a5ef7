# exercise: softplus
# style: forward by torch.nn.functional.softplus (its default threshold of 20), then the forward-AD tutorial's dual-tensor check of the jvp (fwAD.dual_level, make_dual, unpack_dual) in the cell
# source: https://pytorch.org/tutorials/intermediate/forward_ad_usage.html ("with fwAD.dual_level(): dual_input = fwAD.make_dual(primal, tangent) ... jvp = fwAD.unpack_dual(dual_output).tangent") and https://pytorch.org/docs/stable/generated/torch.nn.functional.softplus.html
import torch.autograd.forward_ad as fwAD


class Softplus(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return torch.nn.functional.softplus(x)

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


primal = torch.randn(10, 10, dtype=torch.double)
tangent = torch.randn(10, 10, dtype=torch.double)
with fwAD.dual_level():
    dual_input = fwAD.make_dual(primal, tangent)
    dual_output = Softplus.apply(dual_input)
    jvp = fwAD.unpack_dual(dual_output).tangent
assert torch.allclose(jvp, torch.sigmoid(primal) * tangent)
