"""Observations across the sandbox boundary: JSON with tensors as {dtype, shape, data}, decoded defensively.

The sandbox is untrusted, so ``decode`` accepts only plain JSON values and well-formed tensors of allowed
dtypes within size limits; anything else raises ``WireError`` (which fails the check, never passes it).
"""

from __future__ import annotations

import math
from typing import Any

import torch

DTYPES = {
    "float64": torch.float64, "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "int64": torch.int64, "int32": torch.int32, "bool": torch.bool,
}
MAX_ELEMENTS = 1_000_000  # tensor elements per decoded value; probes are tiny
MAX_ITEMS = 100_000  # list items and dict entries per decoded value (the observer records a few hundred)
MAX_TEXT = 4_000_000  # characters of strings and keys per decoded value
MAX_DEPTH = 32


class WireError(ValueError):
    pass


def encode(obj: Any) -> Any:
    """Plain JSON-able data; tensors become {"__tensor__": dtype, "shape": [...], "data": [...]}."""
    if isinstance(obj, torch.Tensor):
        # torch's own functions with subclass dispatch off: a plain copy, whatever methods obj's class defines (the
        # observers send exact tensors only; this keeps the wire from ever calling a student's reshape or tolist)
        with torch._C.DisableTorchFunctionSubclass():
            t = torch.Tensor.cpu(torch.Tensor.detach(obj))
            dtype = str(t.dtype).removeprefix("torch.")
            data = t.double() if t.dtype in (torch.bfloat16, torch.float16) else t
            return {"__tensor__": dtype, "shape": list(t.shape), "data": data.reshape(-1).tolist()}
    if isinstance(obj, dict):
        return {str(k): encode(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [encode(v) for v in obj]
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    return str(obj)


def decode(obj: Any, _depth: int = 0, _budget: list[int] | None = None) -> Any:
    budget = _budget if _budget is not None else [MAX_ELEMENTS, MAX_ITEMS, MAX_TEXT]
    if _depth > MAX_DEPTH:
        raise WireError("observation nested too deeply")
    if isinstance(obj, dict):
        if "__tensor__" in obj:
            return _tensor(obj, budget)
        _spend(budget, len(obj), sum(len(str(k)) for k in obj))
        return {str(k): decode(v, _depth + 1, budget) for k, v in obj.items()}
    if isinstance(obj, list):
        _spend(budget, len(obj), 0)
        return [decode(v, _depth + 1, budget) for v in obj]
    if isinstance(obj, str):
        _spend(budget, 0, len(obj))
        return obj
    if obj is None or isinstance(obj, (bool, int, float)):
        return obj
    raise WireError(f"unexpected value of type {type(obj).__name__}")


def _spend(budget: list[int], items: int, chars: int) -> None:
    budget[1] -= items
    budget[2] -= chars
    if budget[1] < 0 or budget[2] < 0:
        raise WireError(f"observation too large (more than {MAX_ITEMS:,} items or {MAX_TEXT:,} characters)")


def _tensor(obj: dict[str, Any], budget: list[int]) -> torch.Tensor:
    dtype = DTYPES.get(obj.get("__tensor__"))  # type: ignore[arg-type]
    shape, data = obj.get("shape"), obj.get("data")
    if dtype is None or not isinstance(shape, list) or not isinstance(data, list):
        raise WireError("malformed tensor")
    if not all(isinstance(s, int) and 0 <= s <= MAX_ELEMENTS for s in shape):
        raise WireError("malformed tensor shape")
    numel = math.prod(shape)
    budget[0] -= numel
    if numel != len(data) or budget[0] < 0:
        raise WireError("tensor data does not match its shape, or is too large")
    if not all(isinstance(x, (int, float)) for x in data):  # bools are ints, which is fine
        raise WireError("tensor data must be numbers")
    try:
        kind = torch.float64 if dtype in (torch.bfloat16, torch.float16) else dtype
        return torch.tensor(data, dtype=kind).reshape(shape).to(dtype)
    except (RuntimeError, OverflowError, ValueError) as exc:  # e.g. integers out of the dtype's range
        raise WireError(f"tensor data does not fit {dtype}: {exc}") from None
