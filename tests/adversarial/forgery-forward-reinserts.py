# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=2 exp=6 sinh=6 cube=6
# bound: 15
# policy: off
# class: forgeries
# why: a wrong backward (the sign) whose forward, each time it runs, pops the grader's observers _grads and
#      run_gradcheck out of grader.sandboxed.observe's namespace and inserts forgeries under the same names (_grads negates
#      what it records, run_gradcheck always passes): the namespace keeps its size and its names, only the order
#      and the objects change. The guard's fast path (each dict's version, then an identity pass) must see it
#      between two calls of forward and put the originals back. No frames, gc or ctypes.
import grader.sandboxed.observe


def _negated(values):
    return [None if v is None else (-v.detach() if isinstance(v, torch.Tensor) else v) for v in values]


def _always_ok(fn, inputs, second):
    return {"ok": True}


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        namespace = vars(grader.sandboxed.observe)
        for name, forged in (("_grads", _negated), ("run_gradcheck", _always_ok)):
            namespace.pop(name, None)
            namespace[name] = forged
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
