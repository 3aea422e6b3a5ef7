# exercise: softplus
# style: torch.nn.functional.softplus in forward, sigmoid in backward and jvp, and a vmap staticmethod in the torch.func docs' style (in_dims unpacked, info unused, the batched call is the Function itself)
# source: https://pytorch.org/docs/stable/generated/torch.nn.functional.softplus.html ; https://pytorch.org/docs/stable/notes/extending.func.html ("Defining the vmap staticmethod"); https://pytorch.org/docs/stable/generated/torch.autograd.Function.jvp.html
import torch.nn.functional as F


class Softplus(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return F.softplus(x)

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

    # The signature of the vmap staticmethod is:
    # vmap(info, in_dims: Tuple[Optional[int]], *args)
    # where *args is the same as the arguments to `forward`.
    @staticmethod
    def vmap(info, in_dims, x):
        x_bdim, = in_dims
        # softplus is elementwise: the batched computation is the same
        # computation, and the output keeps the batch dimension where it was.
        return Softplus.apply(x), x_bdim
