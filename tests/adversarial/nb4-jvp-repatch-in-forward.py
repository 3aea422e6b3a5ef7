# notebook: 04_modern_functions.ipynb
# cell: softplus
# others: solution
# expect: softplus=5 hvp=4
# bound: 20
# policy: off
# class: forgeries4
# why: a jvp that ignores the tangent, and a forward that, each time it runs, installs a torch.func.jvp and a
#      forward_ad.unpack_dual that hand back softplus's true tangent sigmoid(x) * t (the first argument is the
#      input). The forward-mode check calls forward first, then torch.func.jvp and dual tensors: without the
#      guard's restore after every return from forward, it would observe the forgeries (softplus=6).
import torch.autograd.forward_ad
import torch.func

_real_jvp, _real_unpack_dual = torch.func.jvp, torch.autograd.forward_ad.unpack_dual
_inputs = []


def _forged_jvp(func, primals, tangents, **kwargs):
    out = func(*primals)
    return out, torch.sigmoid(primals[0]) * tangents[0]


def _forged_unpack_dual(tensor, *, level=None):
    unpacked = _real_unpack_dual(tensor, level=level)
    if unpacked.tangent is None or not _inputs:
        return unpacked
    x, t = _inputs[-1]
    return type(unpacked)(unpacked.primal, torch.sigmoid(x) * t)


class Softplus(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))

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
        _inputs.append((x, x_t))
        torch.func.jvp = _forged_jvp
        torch.autograd.forward_ad.unpack_dual = _forged_unpack_dual
        return torch.sigmoid(x)  # wrong: the tangent x_t is ignored


_forward = Softplus.forward


def _forward_that_patches(x):
    torch.func.jvp = _forged_jvp
    torch.autograd.forward_ad.unpack_dual = _forged_unpack_dual
    return _forward(x)


Softplus.forward = staticmethod(_forward_that_patches)
