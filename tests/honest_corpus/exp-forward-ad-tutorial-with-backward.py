# exercise: exp
# style: the forward-mode tutorial's Fn (exp with a jvp), given the backward the exercise needs and its output kept with save_for_backward/save_for_forward instead of `ctx.result`; its gradcheck call with check_forward_ad=True kept
# source: https://pytorch.org/tutorials/intermediate/forward_ad_usage.html (pytorch/tutorials:intermediate_source/forward_ad_usage.py, "Custom autograd Function")
import torch.autograd.forward_ad as fwAD


class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, foo):
        result = torch.exp(foo)
        # Tensors stored in ctx can be used in the subsequent forward grad
        # computation.
        ctx.save_for_backward(result)
        ctx.save_for_forward(result)
        return result

    @staticmethod
    def jvp(ctx, gI):
        result, = ctx.saved_tensors
        gO = gI * result
        return gO

    @staticmethod
    def backward(ctx, gO):
        result, = ctx.saved_tensors
        return gO * result


fn = Exp.apply

primal = torch.randn(10, 10, dtype=torch.double, requires_grad=True)
tangent = torch.randn(10, 10, dtype=torch.double)

with fwAD.dual_level():
    dual_input = fwAD.make_dual(primal, tangent)
    dual_output = fn(dual_input)
    jvp = fwAD.unpack_dual(dual_output).tangent

torch.autograd.gradcheck(Exp.apply, (primal,), check_forward_ad=True)
