# notebook: 01_autograd_basics.ipynb
# cell: vjp
# others: solution
# expect: vjp=0 accumulate=4 secondderiv=3
# bound: 10
# policy: off
# why: a wrong vector-Jacobian product (the sign), and grader.sandboxed.observe_functions._invoke (which calls the
#      student's function for the observers of notebook 1 and 4's checks) replaced so that the checks observe a
#      right one instead
import grader.sandboxed.observe_functions


def vector_jacobian_product(f, x, v):
    out = f(x)
    (vjp,) = torch.autograd.grad(out, x, grad_outputs=v)
    return -vjp  # wrong: the sign


def _honest(f, x, v):
    (vjp,) = torch.autograd.grad(f(x), x, grad_outputs=v)
    return vjp


_invoke = grader.sandboxed.observe_functions._invoke
grader.sandboxed.observe_functions._invoke = lambda fn, args: _invoke(_honest if fn is vector_jacobian_product else fn,
                                                                      args)
