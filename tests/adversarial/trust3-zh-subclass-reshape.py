# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 20
# class: trust3-zh
# assignment: autograd-zh
# why: trust3-subclass-reshape handed in in the Chinese notebooks (nbgrader's assignment autograd-zh, as the demo's mei
#      and wen hand them in; the other answer cells are the Chinese solutions'): the same attack, the same checks, the
#      same expectation. Square's backward is the catalogued square-missing-factor (grad_out * x: honestly forward 1 +
#      structure 1 = 2 of 6), returned through a helper custom Function `_Report` whose output is a torch.Tensor
#      subclass with ordinary (non-dunder, so the policy allows them) methods detach, clone, reshape and tolist that
#      answer with the right numbers 2 * x * grad_out kept on the tensor; _Report's backward sends double backward
#      through that right formula. The engine's gradient holds grad_out * x, but the observer copies gradients with
#      .detach().clone() and gradcheck / gradgradcheck read their Jacobians with .clone() / .reshape(): every check
#      sees 2x. On the old code (b0039a7): square=6.
class _Shown(torch.Tensor):
    """A tensor whose ordinary methods show ``shown`` (the right gradient) instead of the numbers it holds."""

    def detach(self):
        return torch.Tensor.detach(getattr(self, "shown", self))

    def clone(self, *args, **kwargs):
        return torch.Tensor.clone(getattr(self, "shown", self), *args, **kwargs)

    def reshape(self, *shape):
        return torch.Tensor.reshape(getattr(self, "shown", self), *shape)

    def tolist(self):
        return torch.Tensor.tolist(getattr(self, "shown", self))


class _Report(torch.autograd.Function):
    @staticmethod
    def forward(ctx, wrong, right):
        out = wrong.clone().as_subclass(_Shown)
        out.shown = right.detach().clone()
        return out

    @staticmethod
    def backward(ctx, grad):
        return None, grad  # double backward goes through the right formula


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return _Report.apply(grad_out * x, 2 * x * grad_out)  # wrong: grad_out * x, shown as 2 * x * grad_out
