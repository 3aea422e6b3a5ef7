# exercise: vjp
# style: torch.autograd.functional.vjp, which returns (func_output, vjp); the documented call with v
# source: https://pytorch.org/docs/stable/generated/torch.autograd.functional.vjp.html
from torch.autograd.functional import vjp


def vector_jacobian_product(f, x, v):
    """vᵀJ of f at x, by torch.autograd.functional.vjp (it differentiates a detached copy of x)."""
    _, product = vjp(f, x, v)
    return product
