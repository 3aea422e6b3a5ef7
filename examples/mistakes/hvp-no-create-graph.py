# exercise: hvp
# mistake: the first torch.autograd.grad has no create_graph=True: the gradient is a constant, and differentiating it again raises
# expect: double-backward=hvp_no_create_graph forward-over-reverse=pass
# caught-by: reference
def hvp(f, x, v):
    x = x.detach().requires_grad_()
    g, = torch.autograd.grad(f(x), x)
    return torch.autograd.grad(g, x, v)[0]


def hvp_forward(f, x, v):
    return torch.func.jvp(torch.func.grad(f), (x,), (v,))[1]
