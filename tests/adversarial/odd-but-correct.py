# notebook: 03_double_backward.ipynb
# cell: square exp sinh cube
# others: solution
# expect: square=6 exp=6 sinh=6 cube=6
# bound: 10
# why: right answers written oddly: setup_context (forward without ctx), a class built with type(), one-line
#      lambdas as staticmethods, a subclass, a decorated wrapper, backward returning a 1-tuple, saved tensors
#      unpacked by index, an in-place add on a fresh tensor
# %% cell: square
class _SquareBase(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return torch.pow(x, 2)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)


class Square(_SquareBase):
    @staticmethod
    def backward(ctx, grad_out):
        return (grad_out.mul(ctx.saved_tensors[0]).mul(2.0),)
# %% cell: exp
def _exp_forward(ctx, x):
    out = x.exp()
    ctx.save_for_backward(out)
    return out


Exp = type("Exp", (torch.autograd.Function,), {
    "forward": staticmethod(_exp_forward),
    "backward": staticmethod(lambda ctx, g: g * ctx.saved_tensors[0]),
})
# %% cell: sinh
import functools


class Sinh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        e, f = torch.exp(x), torch.exp(-x)
        ctx.save_for_backward(e, f)
        return 0.5 * (e - f), e, f

    @staticmethod
    def backward(ctx, *grads):
        e, f = ctx.saved_tensors
        g_out, g_e, g_f = grads
        total = torch.zeros_like(e)
        total += g_out * (e + f) / 2 + g_e * e - g_f * f
        return total


def _first(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return fn(x)[0]
    return wrapper


sinh = _first(Sinh.apply)
# %% cell: cube
class Cube(torch.autograd.Function):
    forward = staticmethod(lambda ctx, x: (ctx.save_for_backward(x), cube_forward(x))[1])
    backward = staticmethod(lambda ctx, grad_out: CubeBackward.apply(grad_out, *ctx.saved_tensors))


class CubeBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, grad_out, x):
        ctx.save_for_backward(grad_out, x)
        return cube_backward(grad_out, x)

    @staticmethod
    def backward(ctx, grad_out):
        sav_grad_out, x = ctx.saved_tensors
        return (cube_backward_backward_grad_out(grad_out, x), cube_backward_backward(grad_out, sav_grad_out, x))
