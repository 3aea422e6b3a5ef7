# exercise: secondderiv
# style: the derivative taken n times in a loop (a generic "nth derivative" helper written with functools.reduce over range(n), create_graph=True on every step), called with n = 2
# source: https://docs.python.org/3/library/functools.html#functools.reduce; the repeated torch.autograd.grad(..., create_graph=True) of https://pytorch.org/docs/stable/generated/torch.autograd.grad.html for higher derivatives
import functools


def nth_derivative(f, x, n):
    def step(y, _):
        (g,) = torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y), create_graph=True)
        return g

    return functools.reduce(step, range(n), f(x))


def second_derivative(f, x):
    return nth_derivative(f, x, 2).detach()
