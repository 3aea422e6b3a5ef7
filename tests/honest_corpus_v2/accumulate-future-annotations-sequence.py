# exercise: accumulate
# style: `from __future__ import annotations` with typing.Callable / Sequence annotations, the accumulation written as `loss = loss / accumulation_steps` with the tutorials' variable names
# source: PEP 563 (https://peps.python.org/pep-0563/); the accumulation steps of https://huggingface.co/docs/accelerate/usage_guides/gradient_accumulation ("loss = loss / gradient_accumulation_steps")
from __future__ import annotations

from typing import Any, Callable, Sequence


def mean_gradient_over_batches(loss_fn: Callable[[torch.Tensor, Any], torch.Tensor], w: torch.Tensor,
                               batches: Sequence[Any]) -> torch.Tensor:
    accumulation_steps = len(batches)
    w.grad = None
    for batch in batches:
        loss = loss_fn(w, batch)
        loss = loss / accumulation_steps
        loss.backward()
    return w.grad.clone()
