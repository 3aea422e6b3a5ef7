# exercise: hvp
# mistake: hvp_forward applies torch.func.jvp to f itself, not to its gradient: returns the directional derivative ∇f(x)·v, a number
# expect: double-backward=pass forward-over-reverse=hvp_wrong_shape
# caught-by: reference
def hvp(f, x, v):
    x = x.detach().requires_grad_()
    g, = torch.autograd.grad(f(x), x, create_graph=True)
    return torch.autograd.grad(g, x, v)[0]


def hvp_forward(f, x, v):
    return torch.func.jvp(f, (x,), (v,))[1]
