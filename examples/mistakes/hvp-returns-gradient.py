# exercise: hvp
# mistake: stops after the first differentiation and returns the gradient ∇f(x)
# expect: double-backward=hvp_returns_gradient forward-over-reverse=pass
# caught-by: reference
def hvp(f, x, v):
    x = x.detach().requires_grad_()
    g, = torch.autograd.grad(f(x), x, create_graph=True)
    return g


def hvp_forward(f, x, v):
    return torch.func.jvp(torch.func.grad(f), (x,), (v,))[1]
