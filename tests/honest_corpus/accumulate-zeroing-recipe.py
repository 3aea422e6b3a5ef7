# exercise: accumulate
# style: the article's accumulation loop (range over the steps, loss normalized, comments kept) with optimizer.zero_grad(set_to_none=False) written out for one tensor as torch.optim's Optimizer.zero_grad does it (detach_ or requires_grad_(False), then zero_)
# source: https://adhdecode-articles-3.pages.dev/articles/pytorch/pytorch-gradient-accumulation-large-batch-training/ ; pytorch/pytorch:torch/optim/optimizer.py (Optimizer.zero_grad)
def mean_gradient_over_batches(loss_fn, w, batches):
    accumulation_steps = len(batches)
    # optimizer.zero_grad() # Zero gradients once at the start
    if w.grad is not None:
        if w.grad.grad_fn is not None:
            w.grad.detach_()
        else:
            w.grad.requires_grad_(False)
        w.grad.zero_()
    for i in range(accumulation_steps):
        # Forward pass
        loss = loss_fn(w, batches[i])
        # Normalize loss to account for accumulation
        loss = loss / accumulation_steps
        # Backward pass
        loss.backward() # Accumulates gradients
    return w.grad.clone()
