# exercise: hvp
# style: torch.autograd.functional.hvp (its docs: returns (func_output, hvp)), the second element taken; hvp_forward as the torch.func tutorial's hvp, jvp(grad(f)) with primals and tangents tuples
# source: https://pytorch.org/docs/stable/generated/torch.autograd.functional.hvp.html and https://pytorch.org/tutorials/intermediate/jacobians_hessians.html ("def hvp(f, primals, tangents): return jvp(grad(f), primals, tangents)[1]")
def hvp(f, x, v):
    _, hv = torch.autograd.functional.hvp(f, x, v)
    return hv


def hvp_forward(f, x, v):
    return torch.func.jvp(torch.func.grad(f), (x,), (v,))[1]
