# exercise: penalty
# mistake: returns the per-sample penalties (one number per sample) without averaging them over the batch
# expect: value=penalty_wrong_shape gradient=penalty_wrong_shape
# caught-by: reference
def gradient_penalty(f, w, x):
    x = x.detach().requires_grad_()
    g, = torch.autograd.grad(f(w, x).sum(), x, create_graph=True)
    return (g.flatten(1).norm(dim=1) - 1) ** 2
