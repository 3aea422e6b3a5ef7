"""The vectors both sides build from a probe: the observer (``grader.sandboxed.observe``) feeds them to the student's
Function, the judge (``grader.judge.custom_functions``) rebuilds the same ones for PyTorch's reference. Plain
functions of the probe's shape and seed, so that nothing about them has to cross from the sandbox."""

from __future__ import annotations

import itertools
from typing import Sequence

import torch

from grader.spec.exercises import Probe, _values, _wide

BATCH = 3  # samples vmap maps over


def grad_output(shape: Sequence[int], seed: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """The grad_output (v) every check uses for a probe, in the probe's dtype; the judge rebuilds the same one."""
    return _values(tuple(shape), seed + 7).to(dtype)


def second_vectors(shapes: Sequence[Sequence[int]], seed: int, dtype: torch.dtype = torch.float64) -> list[torch.Tensor]:
    """The vectors (u) that second-derivative checks contract the gradients with."""
    return [_values(tuple(s), seed + 13 + k).to(dtype) for k, s in enumerate(shapes)]


def requires_grad_patterns(probe: Probe) -> list[tuple[int, ...]]:
    """Every non-empty, non-full set of tensor inputs requiring grad (the full set is the derivative checks')."""
    positions = [i for i, x in enumerate(probe.inputs) if isinstance(x, torch.Tensor)]
    return [p for size in range(1, len(positions)) for p in itertools.combinations(positions, size)]


def tangents(probe: Probe) -> list[torch.Tensor]:
    """The tangent (direction) for each tensor input in forward-mode checks; the judge rebuilds the same."""
    return [_values(tuple(x.shape), probe.seed + 21 + k).to(x.dtype)
            for k, x in enumerate(probe.inputs) if isinstance(x, torch.Tensor)]


def batched(probe: Probe) -> list[torch.Tensor]:
    """Each tensor input stacked BATCH times, for vmap; the judge rebuilds the same. The first sample's magnitudes
    span 0.01 to 8, both signs (``exercises._wide``, as the wide probe's: seeded by the drawn number on that probe),
    the others the ordinary range (0.3 to 1.4): with the ordinary range only, a vmap rule wrong everywhere else
    passed. (Not the probe's own values: its overflow probes, |x| up to 1000, would charge the vmap check again
    for a forward or backward that the other checks already fail there.)"""
    return [torch.cat([_wide(tuple(x.shape), probe.seed + 31 + k).unsqueeze(0),
                       _values((BATCH - 1, *x.shape), probe.seed + 31 + k)]).to(x.dtype)
            for k, x in enumerate(probe.inputs) if isinstance(x, torch.Tensor)]
