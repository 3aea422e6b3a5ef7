# exercise: penalty
# style: `import functools, operator` in the student's own cell above the answer; the number of features per sample computed as functools.reduce(operator.mul, x.shape[1:], 1) to reshape the gradients, torch.linalg.vector_norm over dim 1
# source: https://docs.python.org/3/library/functools.html#functools.reduce with operator.mul (the pre-3.8 product idiom) and https://pytorch.org/docs/stable/generated/torch.linalg.vector_norm.html
# %% cell: before
import functools, operator
# %% cell: answer
def gradient_penalty(f, w, x):
    x = x.detach().requires_grad_()
    scores = f(w, x)
    grads, = torch.autograd.grad(scores.sum(), x, create_graph=True)
    features = functools.reduce(operator.mul, x.shape[1:], 1)
    norms = torch.linalg.vector_norm(grads.reshape(x.shape[0], features), dim=1)
    return ((norms - 1) ** 2).mean()
