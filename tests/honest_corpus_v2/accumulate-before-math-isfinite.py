# exercise: accumulate
# style: `import math` in the student's own cell above the answer, the DETR training loop's guard (loss_value = loss.item(); if not math.isfinite(loss_value): stop), raising instead of sys.exit(1); stale gradients zeroed in place when present
# source: facebookresearch/detr:engine.py (train_one_epoch: "if not math.isfinite(loss_value): print(\"Loss is {}, stopping training\".format(loss_value))")
# %% cell: before
import math
# %% cell: answer
def mean_gradient_over_batches(loss_fn, w, batches):
    if w.grad is not None:
        w.grad.detach_()
        w.grad.zero_()
    for batch in batches:
        loss = loss_fn(w, batch)
        loss_value = loss.item()
        if not math.isfinite(loss_value):
            raise FloatingPointError("Loss is {}, stopping training".format(loss_value))
        (loss / len(batches)).backward()
    return w.grad.detach().clone()
