# exercise: penalty
# mistake: sums the per-sample penalties over the batch instead of averaging them
# expect: value=penalty_sum_not_mean gradient=penalty_sum_not_mean
# caught-by: reference
def gradient_penalty(f, w, x):
    x = x.detach().requires_grad_()
    g, = torch.autograd.grad(f(w, x).sum(), x, create_graph=True)
    return ((g.flatten(1).norm(dim=1) - 1) ** 2).sum()
