# exercise: hvp
# style: `import time` in the student's own cell above the answer; both products written, then timed against each other on a quadratic and printed
# source: https://pytorch.org/tutorials/intermediate/jacobians_hessians.html (hvp by jvp(grad(f)), "forward-over-reverse ... is often the most performant"); https://docs.python.org/3/library/time.html
# %% cell: before
import time
# %% cell: answer
def hvp(f, x, v):
    x = x.detach().requires_grad_()
    g, = torch.autograd.grad(f(x), x, create_graph=True)
    hv, = torch.autograd.grad(g, x, grad_outputs=v)
    return hv


def hvp_forward(f, x, v):
    return torch.func.jvp(torch.func.grad(f), (x,), (v,))[1]


A = torch.randn(50, 50, dtype=torch.double)
quadratic = lambda t: t @ A @ t
p, d = torch.randn(50, dtype=torch.double), torch.randn(50, dtype=torch.double)
for name, fn in (("double backward", hvp), ("forward over reverse", hvp_forward)):
    t0 = time.perf_counter()
    out = fn(quadratic, p, d)
    print(f"{name}: {1e3 * (time.perf_counter() - t0):.2f} ms")
    assert torch.allclose(out, (A + A.T) @ d)
