# exercise: hvp
# mistake: calls x.requires_grad_() on the caller's tensor instead of a detached copy: the caller's x is changed
# expect: double-backward=hvp_changed_x forward-over-reverse=pass
# caught-by: neither
def hvp(f, x, v):
    x.requires_grad_()
    g, = torch.autograd.grad(f(x), x, create_graph=True)
    return torch.autograd.grad(g, x, v)[0]


def hvp_forward(f, x, v):
    return torch.func.jvp(torch.func.grad(f), (x,), (v,))[1]
