# exercise: accumulate
# style: `import logging` and a named logger in the student's own cell above the answer; the loop logs each step with %-style arguments (logging's lazy formatting), the zeroing written as zero_grad(set_to_none=True) does it
# source: https://docs.python.org/3/howto/logging.html (logging.getLogger, logger.info("... %s", value)); torch.optim.Optimizer.zero_grad's set_to_none
# %% cell: before
import logging

log = logging.getLogger("accumulate")
# %% cell: answer
def mean_gradient_over_batches(loss_fn, w, batches):
    w.grad = None  # as optimizer.zero_grad(set_to_none=True)
    n = len(batches)
    for step, batch in enumerate(batches, start=1):
        loss = loss_fn(w, batch) / n
        loss.backward()
        log.info("step %d/%d: loss %.4f", step, n, loss.item())
    return w.grad.clone()
