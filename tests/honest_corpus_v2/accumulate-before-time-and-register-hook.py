# exercise: accumulate
# style: `import time` in the student's own cell above the answer; the answer times the loop and registers a hook on w (Tensor.register_hook) that counts the gradients arriving, removed with handle.remove() before returning
# source: https://pytorch.org/docs/stable/generated/torch.Tensor.register_hook.html (h = v.register_hook(lambda grad: ...); h.remove())
# %% cell: before
import time
# %% cell: answer
def mean_gradient_over_batches(loss_fn, w, batches):
    arrived = []
    handle = w.register_hook(lambda grad: arrived.append(grad.norm().item()))
    start = time.time()
    try:
        w.grad = None
        for batch in batches:
            (loss_fn(w, batch) / len(batches)).backward()
    finally:
        handle.remove()
    print(f"{len(arrived)} gradients accumulated in {time.time() - start:.3f} s")
    return w.grad.clone()
