"""Autograd as the observers need it: the same state for every check, and who computed a derivative.

Two things a notebook can leave behind or slip in, and what the observers do about them:

- **State left on across cells.** A saved-tensor-hooks mode entered and never left, hooks disabled, grad mode or
  anomaly mode switched by a call (``torch.set_grad_enabled(False)``), inference mode: each changes what a check
  observes of a correct Function (the saved-tensor count, a graph that is not built). ``clean()`` takes them off for
  the length of one check and puts them back after, so the student's own later cells see their own state.
- **A derivative that is not the student's.** A ``backward`` that recomputes its forward with grad enabled and asks
  the autograd engine for the derivative returns PyTorch's numbers, not its own. Every public road to the engine
  (``Tensor.backward``, ``torch.autograd.grad``/``backward``, ``torch.func``, ``gradcheck``) goes through
  ``torch.autograd.graph._engine_run_backward``; ``watch()`` wraps it once (before any notebook code runs, so the
  sandbox's guard keeps the wrapper as the original) and counts engine runs started while another is running or
  while an observer drives a ``backward`` itself: a ``backward`` that starts the engine. The state lives in the
  wrapper's closure (a module-level list would be "restored" by the guard after every return from student code).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import torch
import torch.autograd
import torch.autograd.graph

_autograd_c = torch._C._autograd


class EngineWatch:
    """Whether a ``backward`` the observer drove started the autograd engine itself.

    ``driving()`` marks the observer's own call of a ``backward`` (or of the engine); ``started_inside()`` says
    whether, since the last ``reset()``, the engine was started from inside such a call."""

    def __init__(self, state: list[Any]) -> None:
        self._state = state  # [depth, started inside]: shared with the wrapper's closure

    def reset(self) -> None:
        self._state[1] = False

    def started_inside(self) -> bool:
        return bool(self._state[1])

    @contextlib.contextmanager
    def driving(self) -> Iterator[None]:
        self._state[0] += 1
        try:
            yield
        finally:
            self._state[0] -= 1


def _wrap(run: Callable[..., Any], state: list[Any]) -> Callable[..., Any]:
    def _engine_run_backward(*args: Any, **kwargs: Any) -> Any:
        if state[0] > 0:
            state[1] = True
        state[0] += 1
        try:
            return run(*args, **kwargs)
        finally:
            state[0] -= 1

    _engine_run_backward.grader_engine_watch = state  # type: ignore[attr-defined]  (found again on a re-import)
    return _engine_run_backward


def _install() -> EngineWatch:
    current = torch.autograd.graph._engine_run_backward
    state = getattr(current, "grader_engine_watch", None)
    if state is None:
        state = [0, False]
        wrapper = _wrap(current, state)
        torch.autograd.graph._engine_run_backward = wrapper  # type: ignore[attr-defined]
        torch.autograd._engine_run_backward = wrapper  # type: ignore[attr-defined]  (grad() and backward() call this name)
    return EngineWatch(state)


ENGINE = _install()


@contextlib.contextmanager
def clean() -> Iterator[None]:
    """Autograd as a fresh kernel has it, for one check: no saved-tensor hooks (and hooks enabled), grad mode on,
    anomaly mode off, inference mode off; the notebook's own state back afterwards."""
    hooks = []
    while (top := _autograd_c._top_saved_tensors_default_hooks(False)) is not None:
        hooks.append(top)
        _autograd_c._pop_saved_tensors_default_hooks()
    enabled = _autograd_c._saved_tensors_hooks_is_enabled()
    disabled_message = None if enabled else _autograd_c._saved_tensors_hooks_get_disabled_error_message()
    if not enabled:
        _autograd_c._saved_tensors_hooks_enable()
    grad, anomaly, check_nan = torch.is_grad_enabled(), torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()
    torch.set_grad_enabled(True)
    torch.set_anomaly_enabled(False)
    try:
        with torch.inference_mode(False):
            yield
    finally:
        torch.set_anomaly_enabled(anomaly, check_nan)
        torch.set_grad_enabled(grad)
        if disabled_message is not None:
            _autograd_c._saved_tensors_hooks_disable(disabled_message)
        for pack, unpack in reversed(hooks):
            _autograd_c._push_saved_tensors_default_hooks(pack, unpack)
