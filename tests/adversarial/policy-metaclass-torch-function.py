# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: policy
# refused: square
# why: attack on the policy itself: a tensor subclass whose __torch_function__ lies about every result the observer
#      computes on the student's output, made without writing the name in a class body: by type()'s three-argument
#      form, by the metaclass of torch.Tensor (type(torch.Tensor)(...)) and by setattr on a class. All refused.
import torch

def _lie(cls, func, types, args=(), kwargs=None):
    return func(*args, **(kwargs or {}))

name = "_" * 2 + "torch_function" + "_" * 2
try:
    Liar = type("Liar", (torch.Tensor,), {name: classmethod(_lie)})
except Exception:
    Liar = type(torch.Tensor)("Liar", (torch.Tensor,), {name: classmethod(_lie)})

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x ** 2).as_subclass(Liar)

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
