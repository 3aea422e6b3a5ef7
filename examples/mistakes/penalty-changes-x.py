# exercise: penalty
# mistake: calls x.requires_grad_(True) on the caller's tensor instead of a detached copy: the caller's x now requires grad
# expect: value=pass gradient=penalty_changed_x
# caught-by: neither
def gradient_penalty(f, w, x):
    x.requires_grad_(True)
    g, = torch.autograd.grad(f(w, x).sum(), x, create_graph=True)
    return ((g.flatten(1).norm(dim=1) - 1) ** 2).mean()
