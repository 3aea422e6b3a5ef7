# notebook: 04_modern_functions.ipynb
# cell: softplus
# others: solution
# expect: softplus=5 hvp=4
# bound: 20
# policy: off
# class: forgeries4
# why: a jvp that ignores the tangent (forward mode must fail: 5 of 6) but keeps the right tangent aside, and
#      torch._functorch.predispatch._unpack_dual, which forward_ad.unpack_dual calls for every tangent read (by
#      torch.func.jvp and from dual tensors), replaced at cell level to hand back the kept right tangent. On the old
#      code: softplus=6, nothing restored (torch._functorch was not guarded), nothing flagged.
import torch._functorch.predispatch

_right_tangents = []  # (the tangent jvp returned, the one it should have returned)


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
        wrong = torch.sigmoid(x)  # wrong: the tangent x_t is ignored
        _right_tangents.append((wrong, x_t * torch.sigmoid(x)))
        return wrong


_real_unpack_dual = torch._functorch.predispatch._unpack_dual


def _forged_unpack_dual(tensor, *, level=0):
    primal, tangent = _real_unpack_dual(tensor, level=level)
    for wrong, right in reversed(_right_tangents[-20:]):
        try:
            if tangent is not None and wrong.shape == tangent.shape and bool((wrong == tangent).all()):
                return primal, right
        except Exception:
            pass
    return primal, tangent


torch._functorch.predispatch._unpack_dual = _forged_unpack_dual
