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


def _tensors_in(value: Any) -> list[torch.Tensor]:
    """The tensors an attribute holds, directly or in a list/tuple/dict (one level)."""
    values: Iterable[Any] = value.values() if isinstance(value, dict) else (
        value if isinstance(value, (list, tuple)) else (value,))
    return [v for v in values if isinstance(v, torch.Tensor)]


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
        if any(not t.requires_grad for t in _tensors_in(value)):
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
