# exercise: secondderiv
# style: `import math` in the student's own cell above the answer; math.prod(x.shape) to flatten x into a vector of entries (1 for a 0-d x) before differentiating, the result reshaped back
# source: https://docs.python.org/3/library/math.html#math.prod ("math.prod(iterable, *, start=1)", Python 3.8+)
# %% cell: before
import math
# %% cell: answer
def second_derivative(f, x):
    n = math.prod(x.shape)
    y = f(x).reshape(n)
    (dy,) = torch.autograd.grad(y, x, grad_outputs=torch.ones(n, dtype=y.dtype), create_graph=True)
    (d2y,) = torch.autograd.grad(dy.reshape(n), x, grad_outputs=torch.ones(n, dtype=dy.dtype))
    return d2y.reshape(x.shape)
