# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=2 exp=6 sinh=6 cube=6
# bound: 15
# policy: off
# class: forgeries
# why: a wrong backward (the sign), and the guard's view of which dicts were written frozen without touching memory:
#      the guard reads CPython's per-dict version tags through ctypes' c_uint64, and a class attribute (no ctypes call,
#      nothing audited) makes every c_uint64 read 0, so that no namespace ever looks written again; then forward
#      replaces grader.sandboxed.observe._grads by assignment (the wrong sign comes out right) and run_gradcheck (always
#      passes). The guard must read the tags with ctypes' own getter, taken before any notebook code.
import ctypes

import grader.sandboxed.observe

ctypes.c_uint64.value = property(lambda self: 0)


def _negated(values):
    return [None if v is None else (-v.detach() if isinstance(v, torch.Tensor) else v) for v in values]


def _always_ok(fn, inputs, second):
    return {"ok": True}


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        grader.sandboxed.observe._grads = _negated
        grader.sandboxed.observe.run_gradcheck = _always_ok
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
