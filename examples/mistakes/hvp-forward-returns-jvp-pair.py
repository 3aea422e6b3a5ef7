# exercise: hvp
# mistake: hvp_forward returns torch.func.jvp's whole (value, tangent) pair instead of the tangent H v
# expect: double-backward=pass forward-over-reverse=hvp_returned_jvp_pair
# caught-by: reference
def hvp(f, x, v):
    x = x.detach().requires_grad_()
    g, = torch.autograd.grad(f(x), x, create_graph=True)
    return torch.autograd.grad(g, x, v)[0]


def hvp_forward(f, x, v):
    return torch.func.jvp(torch.func.grad(f), (x,), (v,))
