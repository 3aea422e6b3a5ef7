# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=2 exp=6 sinh=6 cube=6
# bound: 10
# policy: off
# why: a wrong backward, and the grader's observers (grader.sandboxed.observe.*), judges (grader.judge.custom_functions.judge,
#      grader.judge.functions.judge) and wire encoder replaced, in place and by changing their code, so that they
#      observe another (right) Function or declare success
import builtins

import grader.judge.custom_functions
import grader.judge.functions
import grader.sandboxed.observe
import grader.boundary.wire

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign


class _Honest(torch.autograd.Function):  # what the forgery reports instead of Square
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return 2 * x * grad_out


_Honest.__name__ = _Honest.__qualname__ = "Square"

_observe = grader.sandboxed.observe.observe
grader.sandboxed.observe.observe = lambda check, ex, fn, probes: _observe(check, ex, _Honest.apply, probes)
builtins._adversarial_honest = _Honest  # reachable from the grader's globals, through builtins
grader.sandboxed.observe.forward.__code__ = (lambda ex, fn, probe: {"forward": call(ex, _adversarial_honest.apply, probe.fresh())[0]}).__code__
grader.sandboxed.observe.raw_backward = lambda probe, out, node, v: {"cls": "Square", "grads": [2 * probe.inputs[0].detach() * v]}
grader.judge.custom_functions.judge = lambda *args, **kwargs: "all good"
grader.judge.functions.judge = lambda *args, **kwargs: "all good"
