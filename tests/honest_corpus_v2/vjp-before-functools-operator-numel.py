# exercise: vjp
# style: the student's own cell above the answer with `import functools, operator` (the classic product-of-a-list idiom, functools.reduce(operator.mul, shape, 1)), used in the answer to check that v has one weight per output entry before torch.autograd.grad
# source: https://docs.python.org/3/library/functools.html#functools.reduce and the accepted answer of https://stackoverflow.com/questions/595374/whats-the-function-like-sum-but-for-multiplication-product
# %% cell: before
import functools, operator
# %% cell: answer
def vector_jacobian_product(f, x, v):
    out = f(x)
    n_out = functools.reduce(operator.mul, out.shape, 1)
    assert v.numel() == n_out, f"v has {v.numel()} entries, f(x) has {n_out}"
    (vjp,) = torch.autograd.grad(out, x, grad_outputs=v)
    return vjp
