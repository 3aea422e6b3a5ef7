# exercise: accumulate
# style: `from tqdm.auto import tqdm` in the student's own cell above the answer (the progress bar every training-loop tutorial wraps its loader in); the accumulation loop wrapped in tqdm(..., leave=False)
# source: https://tqdm.github.io/docs/shortcuts/#tqdmauto ("from tqdm.auto import tqdm" picks the notebook widget in Jupyter) and the accumulation loop of https://huggingface.co/docs/accelerate/usage_guides/gradient_accumulation
# %% cell: before
from tqdm.auto import tqdm
# %% cell: answer
def mean_gradient_over_batches(loss_fn, w, batches):
    w.grad = None
    for batch in tqdm(batches, desc="accumulating", leave=False):
        loss = loss_fn(w, batch) / len(batches)
        loss.backward()
    return w.grad.clone()
