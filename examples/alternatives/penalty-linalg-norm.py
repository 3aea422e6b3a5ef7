# exercise: penalty
# style: one row per sample with reshape and torch.linalg.vector_norm, the gradient through grad_outputs of ones
def gradient_penalty(f, w, x):
    x = x.detach().clone().requires_grad_(True)
    out = f(w, x)
    (g,) = torch.autograd.grad(out, x, grad_outputs=torch.ones_like(out), create_graph=True)
    norms = torch.linalg.vector_norm(g.reshape(g.shape[0], -1), dim=1)
    return torch.mean((norms - 1) ** 2)
