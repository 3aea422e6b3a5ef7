# exercise: penalty
# mistake: one norm of the whole batch's gradient instead of one norm per sample
# expect: value=penalty_norm_over_batch gradient=penalty_norm_over_batch
# caught-by: reference
# seen: https://github.com/keras-team/keras-contrib/pull/232
def gradient_penalty(f, w, x):
    x = x.detach().requires_grad_()
    g, = torch.autograd.grad(f(w, x).sum(), x, create_graph=True)
    return (g.norm() - 1) ** 2
