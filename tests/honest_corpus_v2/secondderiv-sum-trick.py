# exercise: secondderiv
# style: the "elementwise f, so differentiate the sum" trick twice: grad of f(x).sum() with create_graph=True, then grad of that gradient's sum; no grad_outputs anywhere
# source: the double-backward recipe of https://pytorch.org/docs/stable/notes/autograd.html (create_graph=True makes the gradient differentiable) as forum answers write it for elementwise second derivatives
def second_derivative(f, x):
    dy_dx, = torch.autograd.grad(f(x).sum(), x, create_graph=True)
    d2y_dx2, = torch.autograd.grad(dy_dx.sum(), x)
    return d2y_dx2
