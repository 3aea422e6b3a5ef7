# exercise: accumulate
# style: the gradient-accumulation loop every tutorial shows (loss divided by accumulation_steps, backward per mini-batch, zero_grad once at the start), with the optimizer's zero_grad written out for one tensor (set to None, as zero_grad(set_to_none=True) does)
# source: https://ayushgarg.ca/notes/Gradient-Accumulation ("Example training loop"); https://huggingface.co/docs/transformers/main/grad_accumulation
def mean_gradient_over_batches(loss_fn, w, batches):
    accumulation_steps = len(batches)
    w.grad = None  # optimizer.zero_grad()

    for step, batch in enumerate(batches):
        loss = loss_fn(w, batch)
        loss = loss / accumulation_steps
        loss.backward()

    return w.grad.clone()
