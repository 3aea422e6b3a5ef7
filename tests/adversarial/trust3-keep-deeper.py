# notebook: 03_double_backward.ipynb
# cell: exp
# others: solution
# expect: square=6 exp=5 sinh=6 cube=6
# bound: 15
# class: trust3
# why: the catalogued exp-output-on-ctx (Exp's output kept as a ctx attribute: a reference cycle; forward, first and
#      second order pass, the structure check fails: 5 of 6) with the output kept one object deeper,
#      `ctx.result = _Keep(result)`, _Keep a plain class holding the tensor: the structure check looks for tensors
#      on ctx directly or in a list/tuple/dict, not inside an object. Honestly the same mistake: exp=5.
#      On the old code (b0039a7): exp=6.
class _Keep:
    def __init__(self, tensor):
        self.tensor = tensor


class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = torch.exp(x)
        ctx.result = _Keep(result)
        return result

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out * ctx.result.tensor
