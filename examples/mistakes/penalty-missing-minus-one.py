# exercise: penalty
# mistake: penalises the squared gradient norm (the R1 regulariser) instead of WGAN-GP's (‖g‖ − 1)²
# expect: value=penalty_missing_minus_one gradient=penalty_missing_minus_one
# caught-by: reference
def gradient_penalty(f, w, x):
    x = x.detach().requires_grad_()
    g, = torch.autograd.grad(f(w, x).sum(), x, create_graph=True)
    return g.flatten(1).pow(2).sum(dim=1).mean()
