# exercise: penalty
# mistake: uses the squared norm (sum of squares) instead of the norm
# expect: value=penalty_squared_norm gradient=penalty_squared_norm
# caught-by: reference
def gradient_penalty(f, w, x):
    x = x.detach().requires_grad_()
    g, = torch.autograd.grad(f(w, x).sum(), x, create_graph=True)
    return ((g.pow(2).sum(dim=1) - 1) ** 2).mean()
