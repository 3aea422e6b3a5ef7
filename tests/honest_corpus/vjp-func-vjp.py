# exercise: vjp
# style: torch.func.vjp as its docs show it: (_, vjpfunc) = vjp(f, x), then vjpfunc(cotangent)[0]
# source: https://pytorch.org/docs/stable/generated/torch.func.vjp.html
def vector_jacobian_product(f, x, v):
    (_, vjpfunc) = torch.func.vjp(f, x)
    return vjpfunc(v)[0]
