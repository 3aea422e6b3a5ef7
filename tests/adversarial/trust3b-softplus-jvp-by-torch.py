# notebook: 04_modern_functions.ipynb
# cell: softplus
# others: solution
# expect: softplus=0..5 hvp=4
# bound: 20
# class: trust3b
# why: Softplus's backward is the student's own (right), but its jvp writes no tangent: it returns
#      torch.func.jvp(F.softplus, (x,), (x_t,))[1], PyTorch's forward-mode derivative of its own softplus, and where
#      torch.func refuses to nest (inside the observer's forward_ad dual level) recomputes F.softplus under
#      enable_grad on a copy of x and calls the output's grad_fn node with x_t (softplus is elementwise: vjp = jvp).
#      Neither road starts the autograd engine. The catalogued softplus-jvp-ignores-tangent (a wrong jvp) earns 5;
#      a tangent PyTorch computed should not earn the forward-mode point (0..5). In-process: forward mode passes,
#      softplus=6 (WORKED).
#      Graded by nbgrader (class trust3b, on 54c9625): softplus=6 (WORKED).
import torch.nn.functional as F


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
        try:
            return torch.func.jvp(F.softplus, (x,), (x_t,))[1]
        except RuntimeError:  # under forward_ad's dual level torch.func does not nest: ask the node instead
            with torch.enable_grad():
                return F.softplus(x.detach().requires_grad_()).grad_fn(x_t).detach()
