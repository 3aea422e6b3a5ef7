# notebook: 04_modern_functions.ipynb
# cell: softplus
# others: solution
# expect: softplus=5 hvp=4
# bound: 20
# policy: off
# class: forgeries4
# why: no vmap rule (the vmap check must fail: 5 of 6), and torch._functorch.apis.vmap_impl, which torch.func.vmap
#      calls, replaced at cell level by a loop over the samples (that needs no vmap rule, and gives the right
#      per-sample gradients too). On the old code: softplus=6, nothing restored, nothing flagged.
import torch._functorch.apis


class Softplus(torch.autograd.Function):  # no generate_vmap_rule, no vmap staticmethod
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
        return x_t * torch.sigmoid(x)


def _loop_vmap_impl(func, in_dims, out_dims, randomness, chunk_size, *args, **kwargs):
    rows = [func(*(a[i] for a in args), **kwargs) for i in range(args[0].shape[0])]
    if isinstance(rows[0], tuple):
        return tuple(torch.stack(column) for column in zip(*rows))
    return torch.stack(rows)


torch._functorch.apis.vmap_impl = _loop_vmap_impl
