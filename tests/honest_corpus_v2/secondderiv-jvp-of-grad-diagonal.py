# exercise: secondderiv
# style: forward-over-reverse with torch.func: for an elementwise f the Hessian of sum(f) is diagonal, so its product with a vector of ones (jvp of grad) is f''(x); the docs' hvp recipe applied with v = ones
# source: https://pytorch.org/docs/stable/func.migrating.html and https://pytorch.org/tutorials/intermediate/jacobians_hessians.html ("hvp: jvp(grad(f), primals, tangents)")
def second_derivative(f, x):
    def total(t):
        return f(t).sum()

    _, d2 = torch.func.jvp(torch.func.grad(total), (x.detach(),), (torch.ones_like(x),))
    return d2
