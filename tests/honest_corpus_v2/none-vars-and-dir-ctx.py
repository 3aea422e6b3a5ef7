# exercise: none
# notebook: 02_custom_function.ipynb
# style: a Function written to explore ctx: dir(ctx) filtered for public names, and vars(ctx) printed only when a flag is set (it is not), the flag being how students leave debugging in
# source: https://docs.python.org/3/library/functions.html#vars and #dir; https://pytorch.org/docs/stable/notes/extending.html (ctx attributes)
SHOW_CTX_DICT = False


class Explore(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.scale = 2.0
        print([name for name in dir(ctx) if not name.startswith("_")][:8])
        if SHOW_CTX_DICT:
            print(vars(ctx))
        return x * ctx.scale

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.scale


Explore.apply(torch.ones(2, requires_grad=True)).sum().backward()
