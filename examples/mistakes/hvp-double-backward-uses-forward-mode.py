# exercise: hvp
# mistake: hvp (the double-backward part) is written as forward-over-reverse too: the values are right, the method asked for is not
# expect: double-backward=hvp_not_double_backward forward-over-reverse=pass
# caught-by: neither
def hvp(f, x, v):
    return torch.func.jvp(torch.func.grad(f), (x,), (v,))[1]


def hvp_forward(f, x, v):
    return torch.func.jvp(torch.func.grad(f), (x,), (v,))[1]
