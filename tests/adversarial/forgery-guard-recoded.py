# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=2 exp=6 sinh=6 cube=6
# bound: 15
# policy: off
# class: forgeries
# why: a wrong backward (the sign), and the guard itself disarmed before any observation: the code of every method of
#      grader.sandboxed.child's Guard (and of the helpers it compares with, and of the shell's output streams in
#      grader.sandboxed.shell) is replaced by one that puts nothing back, then the
#      grader's observers are replaced by assignment: grader.sandboxed.observe._grads negates what it records (the wrong sign
#      comes out right) and run_gradcheck always passes. The guard's own code must be as guarded as the grader's
#      functions it puts back. No frames, gc or ctypes.
import types

import grader.sandboxed.child
import grader.sandboxed.observe
import grader.sandboxed.shell


def _nothing(*args, **kwargs):
    return []


def _unchanged(*args, **kwargs):
    return True


def _negated(values):
    return [None if v is None else (-v.detach() if isinstance(v, torch.Tensor) else v) for v in values]


def _always_ok(fn, inputs, second):
    return {"ok": True}


for _owner in [grader.sandboxed.child.Guard] + [v for m in (grader.sandboxed.child, grader.sandboxed.shell)
                                                for k, v in vars(m).items() if k.startswith("_") and isinstance(v, type)]:
    for _name, _value in list(vars(_owner).items()):
        if isinstance(_value, types.FunctionType) and _name != "__init__":
            _returns_list = _name in ("restore", "written", "_lengths")
            _value.__code__ = (_nothing if _returns_list or _name.startswith("_restore") else _unchanged).__code__


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
