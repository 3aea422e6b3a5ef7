# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=2 exp=6 sinh=6 cube=6
# bound: 15
# policy: off
# class: forgeries
# why: a wrong backward (the sign) whose forward, each time it runs, (re)installs a forged torch.autograd.grad
#      (the gradient of x**2 whenever the output comes from Square) and gradcheck / gradgradcheck that always
#      pass. The child restores torch before observing, but observing starts by calling forward, so everything
#      after it (the vector-Jacobian products, the double backward, gradcheck) runs the forgeries. No frames,
#      gc or ctypes. On the old code: square=6 (full marks).
import torch.autograd

_real_grad = torch.autograd.grad


def _forged_grad(outputs, inputs, grad_outputs=None, **kwargs):
    outs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    if any(type(getattr(o, "grad_fn", None)).__name__ == "SquareBackward" for o in outs):
        ins = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        return _real_grad([x ** 2 for x in ins], ins, grad_outputs, **kwargs)
    return _real_grad(outputs, inputs, grad_outputs, **kwargs)


def _passes(*args, **kwargs):
    return True


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        torch.autograd.grad = _forged_grad
        torch.autograd.gradcheck = torch.autograd.gradgradcheck = _passes
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
