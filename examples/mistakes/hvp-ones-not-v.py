# exercise: hvp
# mistake: differentiates g.sum() (grad_outputs of ones) instead of passing v: returns H · 1
# expect: double-backward=hvp_ones_not_v forward-over-reverse=pass
# caught-by: reference
def hvp(f, x, v):
    x = x.detach().requires_grad_()
    g, = torch.autograd.grad(f(x), x, create_graph=True)
    return torch.autograd.grad(g.sum(), x)[0]


def hvp_forward(f, x, v):
    return torch.func.jvp(torch.func.grad(f), (x,), (v,))[1]
