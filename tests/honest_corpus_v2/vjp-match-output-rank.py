# exercise: vjp
# style: a `match` statement on the output's rank (a 0-d output needs no grad_outputs reshaping; otherwise v is reshaped to the output's shape), in the PEP 636 tutorial's style with a wildcard case
# source: https://peps.python.org/pep-0636/ (structural pattern matching tutorial: literal patterns and `case _:`)
def vector_jacobian_product(f, x, v):
    out = f(x)
    match out.dim():
        case 0:
            weights = v.reshape(())
        case _:
            weights = v.reshape(out.shape)
    return torch.autograd.grad(out, x, grad_outputs=weights)[0]
