# exercise: sinh
# style: ctx.set_materialize_grads(False) in forward, so the gradients of the unused extra outputs arrive as None in a first backward; each term added only when its gradient is not None (the docs' "We must check for None now")
# source: https://pytorch.org/docs/stable/generated/torch.autograd.function.FunctionCtx.set_materialize_grads.html (Func with set_materialize_grads(False), "if g1 is not None: grad_input += g1") and the tutorial's Sinh
class Sinh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        expx = torch.exp(x)
        expnegx = torch.exp(-x)
        ctx.save_for_backward(expx, expnegx)
        return (expx - expnegx) / 2, expx, expnegx

    @staticmethod
    def backward(ctx, grad_out, grad_expx, grad_expnegx):
        expx, expnegx = ctx.saved_tensors
        grad_input = torch.zeros_like(expx)
        if grad_out is not None:  # We must check for None now
            grad_input = grad_input + grad_out * (expx + expnegx) / 2
        if grad_expx is not None:
            grad_input = grad_input + grad_expx * expx
        if grad_expnegx is not None:
            grad_input = grad_input - grad_expnegx * expnegx
        return grad_input


def sinh(x):
    return Sinh.apply(x)[0]
