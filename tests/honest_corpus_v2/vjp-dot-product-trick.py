# exercise: vjp
# style: the "a vjp is the gradient of the dot product <v, f(x)>" trick: torch.autograd.grad of (v * f(x)).sum(), no grad_outputs
# source: https://pytorch.org/tutorials/beginner/blitz/autograd_tutorial.html (Optional Reading, "Vector Calculus using autograd": autograd computes the product vᵀ·J) written as the gradient of the weighted sum
def vector_jacobian_product(f, x, v):
    y = f(x)
    return torch.autograd.grad((v * y).sum(), x)[0]
