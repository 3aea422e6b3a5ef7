# exercise: hvp
# mistake: hvp_forward reuses the double-backward hvp: the values are right, but no forward-mode tangent is ever pushed through f
# expect: double-backward=pass forward-over-reverse=hvp_not_forward_mode
# caught-by: neither
def hvp(f, x, v):
    x = x.detach().requires_grad_()
    g, = torch.autograd.grad(f(x), x, create_graph=True)
    return torch.autograd.grad(g, x, v)[0]


def hvp_forward(f, x, v):
    return hvp(f, x, v)
