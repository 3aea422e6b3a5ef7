# exercise: hvp
# mistake: differentiates with respect to the x it was given, which does not require grad
# expect: double-backward=hvp_x_not_tracked forward-over-reverse=pass
# caught-by: reference
def hvp(f, x, v):
    g, = torch.autograd.grad(f(x), x, create_graph=True)
    return torch.autograd.grad(g, x, v)[0]


def hvp_forward(f, x, v):
    return torch.func.jvp(torch.func.grad(f), (x,), (v,))[1]
