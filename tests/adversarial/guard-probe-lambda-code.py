# notebook: 01_autograd_basics.ipynb
# cell: secondderiv
# others: solution
# expect: vjp=3 accumulate=4 secondderiv=0
# bound: 10
# policy: off
# class: guard-reach
# why: second_derivative returns the FIRST derivative (0 of 3). The cell rewrites the code of the lambdas in the
#      tuple grader.spec.function_probes._ELEMENTWISE (the probe functions f the observer hands the student: x ** 3,
#      sin(x) * x, exp(-x ** 2)) into their derivatives, so that f' of the sandbox's f is f'' of the real one. The
#      judge rebuilds the probes on the trusted side (right f) and compares: the forged answers match. The guard
#      puts back the code of the grader's module-level functions and methods only, and a tuple is no table: a
#      function reached through a table (a tuple, a dict's value, a dataclass field) was never guarded. Now
#      grader.sandboxed.guarded.reached finds it. On the old code: secondderiv=3.
import grader.spec.function_probes


def second_derivative(f, x):
    (g,) = torch.autograd.grad(f(x).sum(), x)
    return g  # wrong: the first derivative


def _cube_derivative(t):
    return 3 * t**2


def _sin_x_derivative(t):
    return torch.sin(t) + t * torch.cos(t)


def _gauss_derivative(t):
    return -2 * t * torch.exp(-t * t)


for (_name, _f), _g in zip(grader.spec.function_probes._ELEMENTWISE,
                           (_cube_derivative, _sin_x_derivative, _gauss_derivative)):
    _f.__code__ = _g.__code__
