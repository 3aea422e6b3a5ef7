# exercise: penalty
# mistake: the per-sample norm is taken over dimension 1 only, not over each flattened sample: right for 2-D x, wrong for images [B, C, H, W]
# expect: value=penalty_norm_over_dim_1 gradient=penalty_norm_over_dim_1
# caught-by: neither
# seen: https://github.com/caogang/wgan-gp/issues/25
def gradient_penalty(f, w, x):
    x = x.detach().requires_grad_()
    g, = torch.autograd.grad(f(w, x).sum(), x, create_graph=True)
    return ((g.norm(2, dim=1) - 1) ** 2).mean()
