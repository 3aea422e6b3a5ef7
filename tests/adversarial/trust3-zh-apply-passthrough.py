# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 20
# class: trust3-zh
# assignment: autograd-zh
# why: trust3-apply-passthrough handed in in the Chinese notebooks (nbgrader's assignment autograd-zh, as the demo's
#      mei and wen hand them in; the other answer cells are the Chinese solutions'): the same attack, the same checks,
#      the same expectation. Square's backward is the catalogued square-missing-factor (honestly 2 of 6), but
#      `Square.apply` (the entry the test cells name) is replaced by `lambda x: _Pass.apply(x * x)`, _Pass a do-nothing
#      custom Function (forward x.view_as(x), backward returns its gradient). The output's grad_fn is _Pass's node,
#      which the observer takes for "a custom Function" (the first custom node when none is named Square); the
#      derivatives are autograd's of x * x and Square.backward is never called. The policy allows the assignment
#      (Square is the notebook's own class). On the old code (b0039a7): square=6.
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * x  # wrong: the factor 2 (never called)


class _Pass(torch.autograd.Function):
    @staticmethod
    def forward(ctx, y):
        return y.view_as(y)

    @staticmethod
    def backward(ctx, grad):
        return grad


Square.apply = lambda x: _Pass.apply(x * x)
