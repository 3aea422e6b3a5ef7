# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=2 exp=6 sinh=6 cube=6
# bound: 15
# policy: off
# class: forgeries
# why: a wrong backward (the sign) whose forward, each time it runs, rewrites the code of the grader's own observers
#      in place, through the descriptor (FunctionType.__code__.__set__), not an assignment: grader.sandboxed.observe._grads
#      negates what it records (the wrong sign comes out right) and run_gradcheck always passes. The guard's fast
#      path compares functions' code only after a write of some function's code: it must see these writes, made
#      between two calls of forward, and put the code back. No frames, gc or ctypes.
import types

import grader.sandboxed.observe


def _negated(values):
    return [None if v is None else (-v.detach() if isinstance(v, torch.Tensor) else v) for v in values]


def _always_ok(fn, inputs, second):
    return {"ok": True}


_set_code = types.FunctionType.__code__.__set__


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        _set_code(grader.sandboxed.observe._grads, _negated.__code__)
        _set_code(grader.sandboxed.observe.run_gradcheck, _always_ok.__code__)
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
