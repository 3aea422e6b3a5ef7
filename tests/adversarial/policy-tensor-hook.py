# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: policy
# refused: square
# why: attack on the policy itself: forward registers a hook on the observer's probe tensor that negates the gradient
#      flowing into it, so the wrong sign of backward comes out right; reached as a method and through getattr.
#      Hooks that outlive a call are refused.
import torch

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        if x.requires_grad:
            getattr(x, "register_" + "hook")(lambda g: -g)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
