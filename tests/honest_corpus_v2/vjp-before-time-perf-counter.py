# exercise: vjp
# style: `import time` in a cell of the student's own above the answer; the answer times the backward pass with time.perf_counter and keeps the last duration in a module-level dict
# source: https://docs.python.org/3/library/time.html#time.perf_counter (the timing idiom of pytorch/tutorials' recipes, e.g. recipes_source/recipes/benchmark.py's "t0 = time.perf_counter()")
# %% cell: before
import time

timings = {}
# %% cell: answer
def vector_jacobian_product(f, x, v):
    t0 = time.perf_counter()
    out = f(x)
    grad_x, = torch.autograd.grad(outputs=out, inputs=x, grad_outputs=v)
    timings["vjp"] = time.perf_counter() - t0
    return grad_x
