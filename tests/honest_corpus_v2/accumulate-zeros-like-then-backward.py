# exercise: accumulate
# style: w.grad reset to a fresh zeros tensor (torch.zeros_like) rather than None, the loss scaled by 1 / N with x.mul, backward per batch, and a copy taken with detach().clone()
# source: the zeroing of torch.optim.Optimizer.zero_grad(set_to_none=False) (pytorch/pytorch:torch/optim/optimizer.py) and the accumulation pattern of https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-accumulation
def mean_gradient_over_batches(loss_fn, w, batches):
    w.grad = torch.zeros_like(w)
    scale = 1.0 / len(batches)
    for batch in batches:
        loss_fn(w, batch).mul(scale).backward()
    return w.grad.detach().clone()
