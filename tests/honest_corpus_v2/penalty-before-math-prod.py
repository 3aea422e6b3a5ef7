# exercise: penalty
# style: `import math` in the student's own cell above the answer; math.prod(x.shape[1:]) features per sample, the norm as the square root of torch.einsum("bi,bi->b", g, g)
# source: https://docs.python.org/3/library/math.html#math.prod and https://pytorch.org/docs/stable/generated/torch.einsum.html (batch dot products "bi,bi->b")
# %% cell: before
import math
# %% cell: answer
def gradient_penalty(f, w, x):
    x = x.detach().requires_grad_()
    grads, = torch.autograd.grad(f(w, x).sum(), x, create_graph=True)
    g = grads.reshape(x.shape[0], math.prod(x.shape[1:]))
    norms = torch.einsum("bi,bi->b", g, g).sqrt()
    return (norms - 1).pow(2).mean()
