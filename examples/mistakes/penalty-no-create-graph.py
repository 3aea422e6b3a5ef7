# exercise: penalty
# mistake: takes the gradient with respect to x without create_graph=True: the penalty's value is right, but it cannot be differentiated with respect to w, so training ignores it
# expect: value=pass gradient=penalty_no_create_graph
# caught-by: reference
# seen: https://github.com/ooples/AiDotNet/issues/1844
def gradient_penalty(f, w, x):
    x = x.detach().requires_grad_()
    g, = torch.autograd.grad(f(w, x).sum(), x)
    return ((g.flatten(1).norm(dim=1) - 1) ** 2).mean()
