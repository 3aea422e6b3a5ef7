# exercise: accumulate
# style: a small @dataclass keeping the running statistics of the loop (field(default_factory=list)), typing annotations, the mean taken by dividing each loss before backward
# source: https://docs.python.org/3/library/dataclasses.html (field(default_factory=list)); the accumulation loop of https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-accumulation
from dataclasses import dataclass, field
from typing import List


@dataclass
class AccumulationStats:
    losses: List[float] = field(default_factory=list)

    def mean(self) -> float:
        return sum(self.losses) / max(len(self.losses), 1)


def mean_gradient_over_batches(loss_fn, w, batches):
    stats = AccumulationStats()
    w.grad = None
    for batch in batches:
        loss = loss_fn(w, batch)
        stats.losses.append(loss.item())
        (loss / len(batches)).backward()
    return w.grad.clone()
