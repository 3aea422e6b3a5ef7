"""The typed boundary between student code and the observers: tensors are read as data, never through their methods.

A value the student's code hands back (a Function's output, a gradient, a tangent) is read only when it is exactly a
``torch.Tensor``; its numbers are copied with torch's own C functions (taken here, at import) while subclass dispatch
is off, so no method a student could define (``reshape``, ``detach``, ``clone``, ``tolist``, a property) runs.
Anything else, a ``torch.Tensor`` subclass included, is recorded as what it is (``{"other": ...}``): the judge fails
the check and says a plain tensor was expected. Why not accept a subclass and copy its storage: the observers read
more than numbers (``requires_grad``, ``grad_fn``, ``shape``), and one rule (exact type or nothing) leaves no
attribute of a student's class in the path of a verdict.
"""

from __future__ import annotations

from typing import Any

import torch

from grader.spec.messages import say

TENSOR = torch.Tensor
_detach, _clone = torch.Tensor.detach, torch.Tensor.clone  # C method descriptors: no lookup on the value's class
_no_subclass_dispatch = torch._C.DisableTorchFunctionSubclass


def is_tensor(value: Any) -> bool:
    """Exactly a ``torch.Tensor`` (a subclass is not one here)."""
    return type(value) is TENSOR


def kind(value: Any) -> str:
    """What ``value`` is, for a message: its type's name, marked when it is a tensor subclass."""
    name = str(getattr(type(value), "__qualname__", "?"))
    return say("tensor_subclass_kind", name=name) if isinstance(value, TENSOR) else name


def copy(value: torch.Tensor) -> torch.Tensor:
    """A detached copy of an exact tensor (callers check ``is_tensor`` first), made by torch's own functions."""
    with _no_subclass_dispatch():
        return _clone(_detach(value))


def plain(value: Any) -> Any:
    """A gradient, output or tangent as data: a detached copy of an exact tensor, None as None, anything else
    (a tensor subclass included) as ``{"other": <what it is>}``."""
    if value is None:
        return None
    if is_tensor(value):
        return copy(value)
    return {"other": kind(value), "subclass": True} if isinstance(value, TENSOR) else {"other": kind(value)}


def requires_grad(value: Any) -> bool:
    """``value.requires_grad`` for an exact tensor; False for anything else (no property of a subclass runs)."""
    return is_tensor(value) and bool(value.requires_grad)
