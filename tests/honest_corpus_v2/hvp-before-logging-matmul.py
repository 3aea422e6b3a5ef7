# exercise: hvp
# style: `import logging` in the student's own cell above the answer; the double-backward hvp with g @ v (the matmul operator on 1-D tensors), logging the gradient's norm; hvp_forward by dual tensors around torch.autograd.grad
# source: https://docs.python.org/3/howto/logging.html; https://pytorch.org/tutorials/intermediate/forward_ad_usage.html (fwAD.dual_level, make_dual, unpack_dual)
# %% cell: before
import logging

logger = logging.getLogger("hvp")
# %% cell: answer
def hvp(f, x, v):
    x = x.detach().requires_grad_()
    g, = torch.autograd.grad(f(x), x, create_graph=True)
    logger.info("|grad f| = %.3g", g.norm().item())
    return torch.autograd.grad(g @ v, x)[0]


def hvp_forward(f, x, v):
    with fwAD.dual_level():
        dual = fwAD.make_dual(x.detach().requires_grad_(), v)
        g, = torch.autograd.grad(f(dual), dual, create_graph=True)
        return fwAD.unpack_dual(g).tangent
