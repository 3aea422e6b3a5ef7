"""Autograd as the observers need it: the same state for every check, and who computed a derivative.

Two things a notebook can leave behind or slip in, and what the observers do about them:

- **State left on across cells.** A saved-tensor-hooks mode entered and never left, hooks disabled, grad mode or
  anomaly mode switched by a call (``torch.set_grad_enabled(False)``), inference mode: each changes what a check
  observes of a correct Function (the saved-tensor count, a graph that is not built). ``clean()`` takes them off for
  the length of one check and puts them back after, so the student's own later cells see their own state.
- **A derivative that is not the student's.** A ``backward`` (or ``jvp``, or a ``forward`` that prepares one) that
  asks PyTorch's differentiation machinery for the derivative returns PyTorch's numbers, not its own. Every public
  road to the reverse engine (``Tensor.backward``, ``torch.autograd.grad``/``backward``, ``torch.func.grad``/``vjp``,
  ``gradcheck``) goes through ``torch.autograd.graph._engine_run_backward``, and every road to forward mode
  (``forward_ad.make_dual``/``dual_level``, ``torch.func.jvp``/``jacfwd``/``linearize``/``hessian``) through
  ``torch.autograd.forward_ad.make_dual`` and ``enter_dual_level``. ``_install`` wraps them once (before any
  notebook code runs, so the sandbox's guard keeps the wrappers as the originals); the observers mark each call of
  the student's code they make (``ENGINE.driving()``: the student's Function called on a probe, its backward called
  directly), and an engine run, like a run of the engine the observer started (inside which torch calls the
  student's backward), counts as student code too. Differentiation started while student code runs is recorded
  (``started_inside``), and the judge fails the derivative checks of that probe. The state lives in the wrappers'
  closure (a module-level list would be "restored" by the guard after every return from student code).
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

    def busy(self) -> bool:
        """Student code the observer drives, or an engine run, is on the stack now (a hook registered here would
        change what the checks read of the student's backward: the policy refuses ``register_hook`` then)."""
        return self._state[0] > 0

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The grader's own use of the machinery while student code may be on the stack: not recorded."""
        depth, self._state[0] = self._state[0], 0
        try:
            yield
        finally:
            self._state[0] = depth

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

    # found again on a re-import; underscored: graded code reads no underscore attribute of a library's function (a
    # public name was graded code's handle on the watch: make_dual.grader_engine_watch[1] = False after a grad call)
    _engine_run_backward._grader_engine_watch = state  # type: ignore[attr-defined]
    return _engine_run_backward


def _flagging(fn: Callable[..., Any], state: list[Any]) -> Callable[..., Any]:
    """``fn`` (a forward-mode entry point) that records being called while student code runs."""
    def flagged(*args: Any, **kwargs: Any) -> Any:
        if state[0] > 0:
            state[1] = True
        return fn(*args, **kwargs)

    flagged.__name__ = getattr(fn, "__name__", "flagged")
    flagged.__doc__ = getattr(fn, "__doc__", None)
    return flagged


def _install() -> EngineWatch:
    import torch.autograd.forward_ad as forward_ad

    current = torch.autograd.graph._engine_run_backward
    state = getattr(current, "_grader_engine_watch", None)
    if state is None:
        state = [0, False]
        wrapper = _wrap(current, state)
        torch.autograd.graph._engine_run_backward = wrapper  # type: ignore[attr-defined]
        torch.autograd._engine_run_backward = wrapper  # type: ignore[attr-defined]  (grad() and backward() call this name)
        # forward mode: torch.func's jvp and linearize call forward_ad.make_dual; dual_level() calls enter_dual_level
        forward_ad.make_dual = _flagging(forward_ad.make_dual, state)  # type: ignore[assignment]
        forward_ad.enter_dual_level = _flagging(forward_ad.enter_dual_level, state)  # type: ignore[assignment]
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
    dual_level_open = _exit_dual_level()
    try:
        with torch.inference_mode(False):
            yield
    finally:
        if dual_level_open:  # a level for the notebook again (its old duals belonged to the one closed)
            _reenter_dual_level()
        torch.set_anomaly_enabled(anomaly, check_nan)
        torch.set_grad_enabled(grad)
        if disabled_message is not None:
            _autograd_c._saved_tensors_hooks_disable(disabled_message)
        for pack, unpack in reversed(hooks):
            _autograd_c._push_saved_tensors_default_hooks(pack, unpack)


def _exit_dual_level() -> bool:
    """Close a forward-mode level a cell entered and never left (``forward_ad.enter_dual_level()``): only one level
    may be open, and the checks of forward mode open their own. True when one was open."""
    import torch.autograd.forward_ad as forward_ad

    level = getattr(forward_ad, "_current_level", -1)
    if not isinstance(level, int) or level < 0:
        return False
    try:
        forward_ad.exit_dual_level(level=level)
    except Exception:  # noqa: BLE001  (not ours to fix: the check then says what forward mode raised)
        return False
    return True


def _reenter_dual_level() -> None:
    import torch.autograd.forward_ad as forward_ad

    try:
        with ENGINE.paused():
            forward_ad.enter_dual_level()
    except Exception:  # noqa: BLE001
        pass
