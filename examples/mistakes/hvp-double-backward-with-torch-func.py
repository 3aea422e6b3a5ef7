# exercise: hvp
# mistake: double backward written with torch.func (grad of grad · v): right on plain PyTorch functions and through the setup_context-style Softplus, but torch.func cannot go through notebook 3's classic-style Square, which is right as it is
# expect: double-backward=hvp_torch_func_through_classic_function forward-over-reverse=pass
# caught-by: neither
def hvp(f, x, v):
    return torch.func.grad(lambda t: torch.func.grad(f)(t) @ v)(x)


def hvp_forward(f, x, v):
    return torch.func.jvp(torch.func.grad(f), (x,), (v,))[1]
