# exercise: penalty
# mistake: differentiates with respect to the x it was given, which does not require grad (f(w, x) does, through w)
# expect: value=penalty_x_not_tracked gradient=penalty_x_not_tracked
# caught-by: reference
def gradient_penalty(f, w, x):
    g, = torch.autograd.grad(f(w, x).sum(), x, create_graph=True)
    return ((g.flatten(1).norm(dim=1) - 1) ** 2).mean()
