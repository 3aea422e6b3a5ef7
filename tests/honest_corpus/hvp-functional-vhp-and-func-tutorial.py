# exercise: hvp
# style: hvp by torch.autograd.functional.vhp (its docs: for a twice continuously differentiable function hvp = vhp, and vhp is the faster one), hvp_forward by the torch.func tutorial's own `hvp` (jvp of grad) under another name
# source: https://pytorch.org/docs/stable/generated/torch.autograd.functional.hvp.html (Note) ; https://pytorch.org/functorch/stable/notebooks/jacobians_hessians.html ("Hessian-vector products": def hvp(f, primals, tangents): return jvp(grad(f), primals, tangents)[1])
from torch.autograd.functional import vhp
from torch.func import jvp, grad


def hvp(f, x, v):
    _, product = vhp(f, x, v)
    return product


def _hvp_tutorial(f, primals, tangents):
    return jvp(grad(f), primals, tangents)[1]


def hvp_forward(f, x, v):
    return _hvp_tutorial(f, (x,), (v,))
