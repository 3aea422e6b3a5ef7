"""Reading the observations of the function checks without trusting them, comparing them with the references, and
the failures a probe raises: the trusted side's common ground for ``grader.judge.autograd_basics`` (notebook 1)
and ``grader.judge.second_order`` (notebook 4), which ``grader.judge.functions`` drives.

Observations may be forged or malformed: a reader raises ``_Malformed`` on anything the observer
(``grader.sandboxed.observe_functions``) does not produce, and the check fails (``malformed_observations``).
Formatting data (numbers, shapes, indices) for findings is done here; the sentences are in ``grader.spec.messages``.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

import torch

from grader.spec.function_probes import ATOL, DTYPE, RTOL
from grader.spec.functions import ERROR_MISTAKES, SIGNATURES, Obs, _first_line, _type_name
from grader.spec.messages import say


class _Fail(Exception):
    """Internal: the diagnosis of one probe (mistake id, where/expected/received, code, template fields).

    ``grader.judge.functions`` records which probe it was and turns it into a ``Finding``."""

    def __init__(self, mistake: str, *, probe: str = "", where: str = "", expected: str | None = None,
                 received: str | None = None, code: str = "", **fields: Any):
        super().__init__(mistake)
        self.mistake, self.probe, self.where = mistake, probe, where
        self.expected, self.received, self.code, self.fields = expected, received, code, fields


class _Malformed(Exception):
    """Internal: an observation does not have the structure ``observe`` produces."""


# ---------------------------------------------------------------------------------------------
# formatting data (numbers, shapes, indices) for findings; the sentences are in grader.spec.messages


def _fmt_shape(shape: torch.Size | Sequence[int]) -> str:
    return str(tuple(shape))


def _fmt_index(index: Sequence[int]) -> str:
    return "[" + ", ".join(str(i) for i in index) + "]"


def _num(x: float) -> str:
    return f"{x:.4f}"


# ---------------------------------------------------------------------------------------------
# reading observations


def _field(obs: Any, key: str) -> Any:
    if not isinstance(obs, dict):
        raise _Malformed(f"expected a dict holding {key!r}, received a {_type_name(obs)}")
    if key not in obs:
        raise _Malformed(f"{key!r} is missing")
    return obs[key]


def _as_tensor(value: Any, what: str) -> torch.Tensor:
    if type(value) is not torch.Tensor:
        raise _Malformed(f"{what} is a {_type_name(value)}, not a tensor")
    if value.layout != torch.strided or value.device.type != "cpu":
        raise _Malformed(f"{what} is not a dense CPU tensor")
    return value.detach()


def _tensor_field(obs: Any, key: str) -> torch.Tensor:
    return _as_tensor(_field(obs, key), repr(key))


def _optional_tensor_field(obs: Any, key: str) -> torch.Tensor | None:
    value = _field(obs, key)
    return None if value is None else _as_tensor(value, repr(key))


def _grad_field(obs: Any, key: str, shape: torch.Size) -> torch.Tensor | None:
    """A recorded ``.grad``: None or a tensor of its parameter's shape (PyTorch allows no other)."""
    grad = _optional_tensor_field(obs, key)
    if grad is not None and grad.shape != shape:
        raise _Malformed(f"{key!r} has shape {_fmt_shape(grad.shape)}, but a .grad has its tensor's shape "
                         f"{_fmt_shape(shape)}")
    return grad


def _bool_field(obs: Any, key: str) -> bool:
    value = _field(obs, key)
    if type(value) is not bool:
        raise _Malformed(f"{key!r} is a {_type_name(value)}, not a bool")
    return value


def _str_field(obs: Any, key: str, optional: bool = False) -> str | None:
    value = _field(obs, key)
    if value is None and optional:
        return None
    if type(value) is not str:
        raise _Malformed(f"{key!r} is a {_type_name(value)}, not a str")
    return value


def _same(a: torch.Tensor | None, b: torch.Tensor | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and bool(torch.equal(a, b))


def _expect_grad_before(obs: Obs, key: str, stale: torch.Tensor | None) -> None:
    """The observer must report the ``.grad`` the grader set up (None or the stale values), nothing else."""
    if not _same(_optional_tensor_field(obs, key), stale):
        raise _Malformed(f"{key!r} is not the gradient the grader set up before the call")


def _fail_if_raised(ex: str, obs: Obs) -> None:
    """When the student's function raised, fail with the mistake the error reveals."""
    if not isinstance(obs, dict):
        raise _Malformed(f"an observation is a {_type_name(obs)}, not a dict")
    if "observer_error" in obs:
        raise _Malformed(f"the observer itself failed ({_first_line(str(obs['observer_error']))})")
    if "error" not in obs:
        return
    error = obs["error"]
    name = _first_line(_str_field(error, "type") or "", 100) or "Exception"
    text = _str_field(error, "message") or ""
    code = _first_line(_str_field(error, "code", optional=True) or "")
    details = {"error_type": name, "error": _first_line(text) or "—", "code": code}
    mistake = next((m for needle, m in ERROR_MISTAKES[ex] if needle in text), None)
    if mistake in ("second_forgot_create_graph", "second_wrong_input"):
        wrt = _grad_input_name(code)
        x_name = error.get("x_name") if isinstance(error.get("x_name"), str) else "x"
        if wrt and wrt != x_name:  # the line differentiates with respect to another tensor than the function's x
            mistake = "second_forgot_create_graph_and_wrong_input" if mistake == "second_forgot_create_graph" else mistake
            details["input"] = wrt
        details.setdefault("input", "another tensor")
        details["x"] = x_name
    # PyTorch's own NotImplementedError ("implement the jvp function") is one of the known errors, not a stub
    if mistake is None and _bool_field(error, "not_implemented"):
        raise _Fail("not_implemented", code=code, error=_first_line(text))
    if mistake is None:
        raise _Fail("raised_error", stage=say("stage_running_function", signature=SIGNATURES[ex]), **details)
    raise _Fail(mistake, **details)


_GRAD_CALL = re.compile(r"grad\(\s*(?:outputs\s*=\s*)?[^,()]+(?:\([^()]*\))?\s*,\s*(?:inputs\s*=\s*)?[(\[]?\s*"
                        r"(?P<name>[A-Za-z_]\w*)\s*[,)\]]")


def _grad_input_name(code: str) -> str:
    """The tensor the student's line differentiates with respect to (``grad(g, y, ...)`` -> ``y``), or ''."""
    match = _GRAD_CALL.search(code or "")
    return match.group("name") if match else ""


def _as_result(result: Any, shape: torch.Size, wrong_shape: str, returned_tuple: str = "returned_tuple",
               **shape_fields: Any) -> torch.Tensor:
    """Check that the recorded ``result`` is a tensor of ``shape``; return its value as float64.

    ``wrong_shape`` is the exercise's mistake id for a tensor of another shape; ``returned_tuple`` its id for a
    tuple or list instead of one tensor (whose hint says which element to return)."""
    kind = _str_field(result, "kind")
    wanted = say("a_tensor_of_shape", shape=_fmt_shape(shape))
    if kind == "none":
        raise _Fail("returned_none", expected=wanted, received="None")
    if kind == "sequence":
        items = _field(result, "items")
        if not isinstance(items, list) or not all(type(i) is str for i in items):
            raise _Malformed("'items' is not a list of type names")
        kind_name = _first_line(_str_field(result, "type") or "", 100)
        inner = ", ".join(_first_line(i, 100) for i in items)
        raise _Fail(returned_tuple, type=kind_name, items=inner, expected=wanted,
                    received=say("a_kind_of", kind=kind_name, items=inner))
    if kind == "other":
        kind_name = _first_line(_str_field(result, "type") or "", 100)
        raise _Fail("returned_not_a_tensor", type=kind_name,
                    expected=say("a_torch_tensor_of_shape", shape=_fmt_shape(shape)),
                    received=say("a_kind", kind=kind_name))
    if kind == "unreadable":
        kind_name = _first_line(_str_field(result, "type") or "", 100)
        raise _Fail("returned_unreadable_tensor", type=kind_name,
                    expected=say("a_plain_tensor_of_shape", shape=_fmt_shape(shape)),
                    received=say("a_kind", kind=kind_name))
    if kind != "tensor":
        raise _Malformed(f"unknown result kind {_first_line(kind or '', 40)!r}")
    value = _tensor_field(result, "value")
    if value.shape != shape:
        raise _Fail(wrong_shape, received_shape=tuple(value.shape), expected_shape=tuple(shape),
                    expected=say("shape_value", shape=_fmt_shape(shape)),
                    received=say("shape_value", shape=_fmt_shape(value.shape)), **shape_fields)
    if not (value.is_floating_point() or value.is_complex()):
        raise _Fail("returned_integer_tensor", dtype=str(value.dtype), expected=say("a_float64_tensor"),
                    received=say("a_dtype_tensor", dtype=value.dtype))
    return value.to(DTYPE)


def _result_value(result: Any) -> torch.Tensor | None:
    """The recorded tensor value of ``result``, or None when the function did not return a tensor."""
    if _str_field(result, "kind") != "tensor":
        return None
    return _tensor_field(result, "value")


# ---------------------------------------------------------------------------------------------
# comparing with the references


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a, b, rtol=RTOL, atol=ATOL))


def _difference(name: str, expected: torch.Tensor | None, received: torch.Tensor | None,
                exact: bool = False) -> dict[str, str]:
    """where/expected/received of the first element where ``received`` differs from ``expected``
    (``exact``: any change counts; otherwise beyond the checks' tolerance)."""
    if expected is None or received is None:
        def describe(t: torch.Tensor | None) -> str:
            return "None" if t is None else say("a_tensor_of_shape", shape=_fmt_shape(t.shape))
        return {"where": name, "expected": describe(expected), "received": describe(received)}
    if expected.shape != received.shape:
        return {"where": f"{name}.shape", "expected": _fmt_shape(expected.shape),
                "received": _fmt_shape(received.shape)}
    e, r = expected.detach().to(DTYPE), received.detach().to(DTYPE)
    same = torch.eq(r, e) if exact else torch.isclose(r, e, rtol=RTOL, atol=ATOL)
    bad = (~same).nonzero()
    index = tuple(int(i) for i in bad[0]) if len(bad) else (0,) * e.dim()
    where = f"{name}{_fmt_index(index)}" if e.dim() else name
    return {"where": where, "expected": _num(e[index].item()), "received": _num(r[index].item())}


def _mismatch(received: torch.Tensor, expected: torch.Tensor) -> dict[str, str]:
    """where/expected/received of the first wrong element of the student's result."""
    return _difference("result", expected, received)


def _fail_if_modified(name: str, before: torch.Tensor, after: torch.Tensor, requires_grad: bool = True) -> None:
    """The student's function must leave its input (``x`` or ``w``) as it was."""
    if not _same(after, before):
        raise _Fail("modified_input", name=name, **_difference(name, before, after, exact=True))
    if not requires_grad:
        raise _Fail("modified_input", name=name, where=f"{name}.requires_grad", expected="True", received="False")


def _grad_changed(name: str, before: torch.Tensor | None, after: torch.Tensor | None) -> dict[str, str] | None:
    """How a ``.grad`` changed during the student's call (where/expected/received), or None if it did not."""
    if _same(before, after):
        return None
    return _difference(name, before, after, exact=True)
