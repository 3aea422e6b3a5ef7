# exercise: hvp
# mistake: hvp_forward builds the whole Hessian with torch.func.hessian and multiplies it by v (n² numbers for what costs two gradients)
# expect: double-backward=pass forward-over-reverse=hvp_forms_hessian
# caught-by: neither
def hvp(f, x, v):
    x = x.detach().requires_grad_()
    g, = torch.autograd.grad(f(x), x, create_graph=True)
    return torch.autograd.grad(g, x, v)[0]


def hvp_forward(f, x, v):
    return torch.func.hessian(f)(x) @ v
