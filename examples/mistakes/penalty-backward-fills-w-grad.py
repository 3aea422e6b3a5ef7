# exercise: penalty
# mistake: gets the gradient with respect to x through .backward(create_graph=True) and x.grad: the same call also accumulates into w.grad
# expect: value=pass gradient=penalty_changed_w_grad
# caught-by: neither
def gradient_penalty(f, w, x):
    x = x.detach().requires_grad_()
    f(w, x).sum().backward(create_graph=True)
    return ((x.grad.flatten(1).norm(dim=1) - 1) ** 2).mean()
