# exercise: secondderiv
# style: `import time` at the top of the answer cell, both autograd.grad calls timed and printed with an f-string, the second derivative returned with .detach()
# source: https://docs.python.org/3/library/time.html#time.perf_counter; the two-call recipe of https://pytorch.org/docs/stable/generated/torch.autograd.grad.html (create_graph=True)
import time


def second_derivative(f, x):
    t0 = time.perf_counter()
    y = f(x)
    (dy,) = torch.autograd.grad(y, x, torch.ones_like(y), create_graph=True)
    (d2y,) = torch.autograd.grad(dy, x, torch.ones_like(dy))
    print(f"second derivative of {tuple(x.shape)} entries in {1e3 * (time.perf_counter() - t0):.2f} ms")
    return d2y.detach()
