"""Evidence from the student's code, taken in the student's process: the line that raised, a backward's source,
what a ``ctx`` holds. The observers (``grader.sandboxed.observe``) record it as plain data; the judge reads the data.
"""

from __future__ import annotations

import inspect
import linecache
import os
import traceback
from typing import Any, Iterable, Sequence

import torch

from grader.spec.messages import say
from grader.spec.findings import MAX_CTX_ATTRS, _short, from_exception  # noqa: F401  (the observers' dx.* names)

GRADER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # grader/, every layer
TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))


def student_line(exc: BaseException) -> str:
    """'Square.backward, line 12: return grad_out * x.numpy()' for the deepest frame outside grader/torch."""
    frames = [
        (frame, lineno)
        for frame, lineno in traceback.walk_tb(exc.__traceback__)
        if not os.path.abspath(frame.f_code.co_filename).startswith((GRADER_DIR, TORCH_DIR))
    ]
    if not frames:
        return ""
    frame, lineno = frames[-1]
    name = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
    text = linecache.getline(frame.f_code.co_filename, lineno, frame.f_globals).strip()
    return say("code_in_function", name=name, line=lineno, code=text) if text else say("line_in_function", name=name,
                                                                                        line=lineno)


def source_of(function: Any) -> str:
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        return ""


def _tensors_in(value: Any, depth: int = 3, budget: list[int] | None = None) -> list[torch.Tensor]:
    """The tensors an attribute holds: itself, or inside lists, tuples, dicts and the student's own objects
    (``ctx.result = _Keep(result)``), down to ``depth`` levels and at most a few hundred values in all.

    Objects are read through their instance ``__dict__`` (or their slots) only: no method or property of theirs
    runs. A tensor subclass counts as a tensor (it is one to autograd)."""
    budget = [300] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0:
        return []
    if isinstance(value, torch.Tensor):
        return [value]
    if depth <= 0 or value is None or isinstance(value, (bool, int, float, complex, str, bytes, type)):
        return []
    if type(value) in (list, tuple, set, frozenset):
        children: Iterable[Any] = list(value)[:64]
    elif type(value) is dict:
        children = list(value.values())[:64]
    elif type(type(value)) is type and not str(type(value).__module__).startswith(("builtins", "torch", "numpy")):
        children = _instance_values(value)  # an object of a class the notebook (or a library it uses) defined
    else:
        return []
    return [t for child in children for t in _tensors_in(child, depth - 1, budget)]


def _instance_values(obj: Any) -> list[Any]:
    """The values an object of the notebook's own classes keeps: its instance dict and its slots, read without
    running its code (``object.__getattribute__`` on the data descriptors of its type)."""
    values: list[Any] = []
    try:
        namespace = object.__getattribute__(obj, "__dict__")
    except (AttributeError, TypeError):
        namespace = None
    if type(namespace) is dict:
        values += list(namespace.values())[:64]
    for klass in type(obj).__mro__:
        slots = vars(klass).get("__slots__", ())
        for slot in ([slots] if isinstance(slots, str) else list(slots)[:64]):
            try:
                values.append(object.__getattribute__(obj, slot))
            except (AttributeError, TypeError):
                pass
    return values


def _tracked(t: torch.Tensor) -> bool:
    """Whether autograd tracks ``t``, read with torch's own getter (no property of a subclass runs)."""
    with torch._C.DisableTorchFunctionSubclass():
        return bool(torch.Tensor.requires_grad.__get__(t))


def tensor_attributes(ctx: Any, limit: int = MAX_CTX_ATTRS) -> list[str]:
    """Names of ctx attributes that hold tensors (directly or in a list/tuple/dict); the first ``limit``."""
    names: list[str] = []
    for name, value in vars(ctx).items() if hasattr(ctx, "__dict__") else []:
        if len(names) >= limit:
            break
        if _tensors_in(value):
            names.append(f"ctx.{name}")
    return names


def tensors_without_history(ctx: Any, saved_with_history: Sequence[bool] = (), limit: int = MAX_CTX_ATTRS) -> list[str]:
    """What backward can read from ``ctx`` that autograd sees as a constant, named as backward reads it
    (``ctx.expx``, ``ctx.saved_tensors[1]``); the first ``limit``.

    Called right after forward, when every tensor input requires grad. Inputs then have history, and outputs
    have the Function's node as ``grad_fn``, however they are kept (attribute or ``save_for_backward``). A
    tensor that does not require grad was made inside forward, where grad mode is off, and is not an output:
    double backward cannot reach ``x`` through it. ``saved_with_history`` says, for each tensor forward gave
    to ``save_for_backward``, whether it required grad when it was packed (the observer's saved-tensor hook):
    reading ``ctx.saved_tensors`` here would run the unpack hooks of whoever saved them."""
    names: list[str] = []
    for name, value in vars(ctx).items() if hasattr(ctx, "__dict__") else []:
        if len(names) >= limit:
            break
        if any(not _tracked(t) for t in _tensors_in(value)):
            names.append(f"ctx.{name}")
    constants = [k for k, tracked in enumerate(saved_with_history) if not tracked]
    try:
        exact = len(saved_with_history) == len(ctx._raw_saved_tensors)  # no None saved, no pack of another node
    except Exception:
        exact = False
    if exact:
        names.extend(f"ctx.saved_tensors[{k}]" for k in constants)
    elif constants:
        names.append(f"{len(constants)} tensor{'s' if len(constants) > 1 else ''} saved with ctx.save_for_backward")
    return names[:limit]
