"""Checks for the graded exercises of notebook 1, "Autograd basics".

One public ``check_*`` function per graded test cell. Each one

- calls the student's function on small float64 probe inputs built from ``seed``,
- compares with a reference computed by PyTorch itself (``torch.autograd.functional``),
- on failure raises ``grader.judge.diagnosis.CheckFailed`` (an ``AssertionError``) carrying a ``Finding``:
  a mistake id from ``MISTAKES`` (a key of ``grader.spec.messages``, so the class report can count it),
  what was called on which probe, the first wrong element, expected versus received, and a hint
  naming the likely mistake and the notebook section to re-read; never a traceback of grader
  internals. Titles and hints come from the message table; only data (values, shapes, types,
  the student's line) and short labels such as ``a tensor of shape (3,)`` are formatted here,
- on success prints a single line starting with ``✓``.

Every check has two halves, as in ``grader.sandboxed.observe`` / ``grader.checks``:

- ``observe(check, fn, **kwargs)`` runs next to the student's code: it calls ``fn`` on the probes
  and records what happened as plain data (dicts, lists, strings, numbers, booleans, None and
  detached tensors): the returned value, the error raised, ``x``/``w`` and their ``.grad`` before and
  after the call, the forward/backward order of the batches, whether the result aliases ``w.grad``.
  It decides nothing.
- ``judge(check, observations, **kwargs)`` runs in the trusted process and never runs student code:
  it rebuilds the same probes from the same keyword arguments (seeded generators), computes the
  references itself and returns the one-line summary or raises ``CheckFailed``. Observations may
  be forged or malformed: anything unexpected fails the check (``malformed_observations``), never
  passes it.

A public check is exactly ``print("✓ " + judge(name, observe(name, fn, **kw), **kw))``.

Nothing here imports nbgrader or Jupyter, prints to stderr or lets a warning escape:
warnings raised inside the student's code are dropped, because nbgrader scores a cell that
writes to stderr as failed.
"""

from __future__ import annotations

import functools
import os
import re
import types
import sysconfig
import traceback
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar

import torch
from torch.autograd.functional import hessian, jacobian

from grader.judge.diagnosis import CheckFailed, Finding, reports_unfinished, unfinished_notice, unfinished_target

__all__ = [
    "SECTIONS",
    "MISTAKES",
    "CHECKS",
    "observe",
    "judge",
    "check_vjp",
    "check_vjp_keeps_grad",
    "check_mean_gradient",
    "check_mean_gradient_stale",
    "check_mean_gradient_copy",
    "check_second_derivative",
    "check_second_derivative_general",
]

#: Notebook section each exercise is taught in (hints point there; titles must match the notebook).
SECTIONS: dict[str, str] = {
    "vjp": "4. Vector outputs and grad_outputs",
    "accumulate": "7. Gradients accumulate: zeroing them",
    "secondderiv": "8. Higher derivatives with create_graph=True",
}

#: How the student's functions are called, as shown in messages.
SIGNATURES: dict[str, str] = {
    "vjp": "vector_jacobian_product(f, x, v)",
    "accumulate": "mean_gradient_over_batches(loss_fn, w, batches)",
    "secondderiv": "second_derivative(f, x)",
}

RTOL = 1e-5
ATOL = 1e-7
DTYPE = torch.float64

#: One observation (per probe): plain data only.
Obs = dict[str, Any]

_F = TypeVar("_F", bound=Callable[..., None])


#: Sections that teach a mistake better than its exercise's own section does.
MISTAKE_SECTIONS: dict[str, str] = {
    "returned_tuple": "4. Vector outputs and grad_outputs",
    "accumulate_backward_twice": "6. backward frees the graph: retain_graph",
}

#: Every mistake a check here can report (a key of ``grader.spec.messages``), with the fields its finding fills
#: besides ``exercise`` and ``function`` (the student's function as called, e.g. ``second_derivative(f, x)``),
#: which every finding of this module carries.
MISTAKES: dict[str, tuple[str, ...]] = {
    # any exercise
    "not_implemented": ("error",),
    "raised_error": ("error_type", "error", "stage"),
    "returned_none": (),
    "returned_tuple": ("type", "items"),
    "returned_not_a_tensor": ("type",),
    "returned_unreadable_tensor": ("type",),
    "returned_integer_tensor": ("dtype",),
    "modified_input": ("name",),
    "malformed_observations": ("why",),
    "grader_error": ("error_type", "error"),
    # vjp
    "vjp_forgot_grad_outputs": ("error_type", "error"),
    "vjp_grad_outputs_wrong_shape": ("error_type", "error"),
    "vjp_output_not_connected": ("error_type", "error"),
    "vjp_returned_jacobian": ("received_shape", "expected_shape"),
    "vjp_wrong_shape": ("received_shape", "expected_shape", "output_shape"),
    "vjp_ones_as_grad_outputs": (),
    "vjp_wrong_sign": (),
    "vjp_wrong": (),
    "vjp_changed_x_grad": (),
    "vjp_transposed": ("received_shape", "expected_shape"),
    "vjp_grad_none_on_entry": ("error_type", "error"),
    "vjp_matmul_shape": ("error_type", "error"),
    "len_of_0d_tensor": ("error_type", "error"),
    "index_of_0d_tensor": ("error_type", "error"),
    # accumulate
    "accumulate_grad_none_on_entry": ("error_type", "error"),
    "accumulate_backward_twice": ("error_type", "error"),
    "accumulate_loss_not_connected": ("error_type", "error"),
    "accumulate_backward_on_non_scalar": ("error_type", "error"),
    "accumulate_inplace_on_w": ("error_type", "error"),
    "accumulate_wrong_shape": ("received_shape", "expected_shape"),
    "accumulate_sum_not_mean": (),
    "accumulate_divided_twice": (),
    "accumulate_reset_in_loop": ("formula",),
    "accumulate_stale_grad_kept": (),
    "accumulate_wrong": (),
    "accumulate_no_backward": ("batch",),
    "accumulate_one_backward_for_all": ("batch", "previous"),
    "accumulate_returns_alias": (),
    # secondderiv
    "second_forgot_create_graph": ("error_type", "error"),
    "second_forgot_grad_outputs": ("error_type", "error"),
    "second_grad_outputs_wrong_shape": ("error_type", "error"),
    "second_wrong_input": ("error_type", "error", "input", "x"),
    "second_forgot_create_graph_and_wrong_input": ("error_type", "error", "input", "x"),
    "second_wrong_shape": ("received_shape", "expected_shape"),
    "second_returned_first_derivative": (),
    "second_off_by_factor_two": ("factor",),
    "second_wrong": (),
    "second_changed_x_grad": (),
}

#: Mistakes that are not about the student's answer: no section to re-read.
_NOT_ABOUT_THE_ANSWER = ("malformed_observations", "grader_error")


def section(exercise: str, mistake: str) -> str:
    """The notebook section a finding points to, quoted as ``grader.checks`` does ('' for grader problems)."""
    if mistake in _NOT_ABOUT_THE_ANSWER:
        return ""
    return f'"{MISTAKE_SECTIONS.get(mistake, SECTIONS[exercise])}"'


class _Fail(Exception):
    """Internal: the diagnosis of one probe (mistake id, where/expected/received, code, template fields).

    ``_judge_all`` records which probe it was; ``judge`` turns it into a ``Finding``."""

    def __init__(self, mistake: str, *, probe: str = "", where: str = "", expected: str | None = None,
                 received: str | None = None, code: str = "", **fields: Any):
        super().__init__(mistake)
        self.mistake, self.probe, self.where = mistake, probe, where
        self.expected, self.received, self.code, self.fields = expected, received, code, fields


def _finding(check: str, exercise: str, failure: _Fail) -> Finding:
    mistake, fields = failure.mistake, dict(failure.fields)
    if mistake not in MISTAKES:  # a bug of ours: say so, never an unknown id in the class report
        mistake, fields = "grader_error", {"error_type": "KeyError", "error": f"unknown mistake id {mistake!r}"}
    signature = SIGNATURES.get(check) or SIGNATURES[exercise]
    fields.setdefault("function", signature)
    probe = f"{signature} with {failure.probe}" if failure.probe else ""
    return Finding(exercise=exercise, check=check, mistake=mistake, probe=probe, where=failure.where,
                   expected=failure.expected, received=failure.received, section=section(exercise, mistake),
                   fields=fields, code=failure.code)


def _student_facing(check: _F) -> _F:
    """Raise the check's ``CheckFailed`` afresh from the check itself (short traceback, no chained context).

    In a notebook the student runs, an exercise whose released stub is untouched is reported instead
    (``diagnosis.reports_unfinished``), as ``grader.checks`` does: Restart & Run All goes on past it."""

    @functools.wraps(check)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        from grader.sandboxed import policy

        policy.refuse_in_self_check(*(a for a in (*args, *kwargs.values()) if callable(a)))
        try:
            check(*args, **kwargs)
        except CheckFailed as failure:
            finding = failure.finding
        else:
            return
        target = unfinished_target(finding)
        if target and reports_unfinished():
            print(unfinished_notice(finding, target))
            return
        raise CheckFailed(finding)

    return wrapper  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------
# formatting data (numbers, shapes, indices) for findings; the sentences are in grader.spec.messages


def _fmt_shape(shape: torch.Size | Sequence[int]) -> str:
    return str(tuple(shape))


def _fmt_index(index: Sequence[int]) -> str:
    return "[" + ", ".join(str(i) for i in index) + "]"


def _num(x: float) -> str:
    return f"{x:.4f}"


_SKIP_DIRS = tuple(
    os.path.normcase(os.path.realpath(p)) + os.sep
    for p in (os.path.dirname(__file__), os.path.dirname(torch.__file__), sysconfig.get_paths()["stdlib"])
)


def _student_line(exc: BaseException) -> str | None:
    """The last traceback line that is in the student's code (not grader, torch or stdlib), if any."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        path = os.path.normcase(os.path.realpath(frame.filename)) if os.path.exists(frame.filename) else frame.filename
        if path.startswith(_SKIP_DIRS):
            continue
        code = (frame.line or "").strip()
        return f"line {frame.lineno}: {code}" if code else f"line {frame.lineno}"
    return None


def _student_function(exc: BaseException) -> str:
    """The qualified name of the student's function that raised (its deepest frame outside grader, torch, stdlib)."""
    for frame, _ in reversed(list(traceback.walk_tb(exc.__traceback__))):
        path = frame.f_code.co_filename
        path = os.path.normcase(os.path.realpath(path)) if os.path.exists(path) else path
        if not path.startswith(_SKIP_DIRS):
            return str(getattr(frame.f_code, "co_qualname", frame.f_code.co_name))[:200]
    return ""


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


# A matrix product whose shapes do not line up (v @ J with J of shape f(x).shape + x.shape), as PyTorch words it.
_MATMUL_SHAPE_ERRORS = ("shapes cannot be multiplied", "size mismatch", "Expected size for first two dimensions of batch2",
                        "inconsistent tensor size")
# A 0-d tensor (x = 2.0, and then its derivatives) used as if it had a dimension.
_ZERO_D_ERRORS = [("len() of a 0-d tensor", "len_of_0d_tensor"), ("invalid index of a 0-dim tensor", "index_of_0d_tensor"),
                  ("too many indices for tensor of dimension 0", "index_of_0d_tensor")]

# Known PyTorch error messages -> the mistake they reveal, per exercise (first match wins).
_ERROR_MISTAKES: dict[str, list[tuple[str, str]]] = {
    "vjp": [
        ("grad can be implicitly created only for scalar outputs", "vjp_forgot_grad_outputs"),
        ("Mismatch in shape", "vjp_grad_outputs_wrong_shape"),
        ("does not require grad", "vjp_output_not_connected"),
        ("'NoneType' object has no attribute", "vjp_grad_none_on_entry"),
        *(( needle, "vjp_matmul_shape") for needle in _MATMUL_SHAPE_ERRORS),
        *_ZERO_D_ERRORS,
    ],
    "accumulate": [
        ("'NoneType' object has no attribute", "accumulate_grad_none_on_entry"),
        ("Trying to backward through the graph a second time", "accumulate_backward_twice"),
        ("does not require grad", "accumulate_loss_not_connected"),
        ("grad can be implicitly created only for scalar outputs", "accumulate_backward_on_non_scalar"),
        ("leaf Variable that requires grad is being used in an in-place operation", "accumulate_inplace_on_w"),
    ],
    "secondderiv": [
        ("does not require grad", "second_forgot_create_graph"),
        ("Trying to backward through the graph a second time", "second_forgot_create_graph"),
        ("grad can be implicitly created only for scalar outputs", "second_forgot_grad_outputs"),
        ("Mismatch in shape", "second_grad_outputs_wrong_shape"),
        # PyTorch's own advice ("Set allow_unused=True") leads the wrong way: the input is the wrong tensor
        ("not have been used in the graph", "second_wrong_input"),
        *_ZERO_D_ERRORS,
    ],
}


# ---------------------------------------------------------------------------------------------
# the student side: turning whatever the student's code did into plain data

_MAX_TEXT = 4000  # characters of an error message kept (hints match on the whole text, not only its first line)
_MAX_ITEMS = 100  # entries of a returned tuple/list described


def _type_name(value: Any) -> str:
    try:
        return str(type(value).__name__)[:100]
    except Exception:  # a metaclass of the student's can make even this fail
        return "object"


def _text(exc: BaseException) -> str:
    try:
        return str(exc)[:_MAX_TEXT]
    except Exception:
        return "<the error message could not be printed>"


def _plain(t: torch.Tensor) -> torch.Tensor:
    """A detached, dense, CPU copy of ``t`` as a plain ``torch.Tensor`` (no subclass, graph or attributes)."""
    with torch._C.DisableTorchFunctionSubclass():
        out = t.detach()
        if out.layout != torch.strided:
            out = out.to_dense()
        out = out.to("cpu").resolve_conj().resolve_neg().clone()
        if type(out) is not torch.Tensor:
            out = out.as_subclass(torch.Tensor)
    return out


def _grad_record(t: torch.Tensor) -> torch.Tensor | None:
    grad = t.grad
    return None if grad is None else _plain(grad)


def _error_record(exc: BaseException) -> Obs:
    """What the student's exception said, as data (the exception itself, and its frames, are not kept)."""
    try:
        where, function = _student_line(exc), _student_function(exc)
    except Exception:
        where, function = None, ""
    return {"type": _type_name(exc), "not_implemented": isinstance(exc, NotImplementedError),
            "message": _text(exc), "code": where, "function": function}


def _result_record(result: Any) -> Obs:
    """What the student's function returned, as data."""
    if result is None:
        return {"kind": "none"}
    if isinstance(result, (tuple, list)):
        items: list[str] = []
        try:
            for item in result:
                if len(items) == _MAX_ITEMS:
                    break
                items.append(_type_name(item))
        except Exception:
            pass
        return {"kind": "sequence", "type": _type_name(result), "items": items}
    if isinstance(result, torch.Tensor):
        try:
            return {"kind": "tensor", "value": _plain(result)}
        except Exception:
            return {"kind": "unreadable", "type": _type_name(result)}
    return {"kind": "other", "type": _type_name(result)}


def _opaque(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` behind a C-level wrapper that offers no way back to it: no ``__wrapped__``, ``__closure__`` or
    ``__globals__`` through which the student's code it is given to could reach the records ``fn`` keeps, or the
    grader's module (gc and frames would, and the sandbox flags those). ``lru_cache(maxsize=0)`` caches nothing:
    each call goes to ``fn``."""
    wrapper = functools.lru_cache(maxsize=0)(fn)
    del wrapper.__wrapped__
    return wrapper


def _invoke(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Obs | None, Any]:
    """Call the student's function: (None, what it returned) or (the error it raised as data, None)."""
    try:
        return None, fn(*args)
    except Exception as exc:  # the student's bug: recorded, judged on the other side
        return _error_record(exc), None


# ---------------------------------------------------------------------------------------------
# the trusted side: reading observations without trusting them


class _Malformed(Exception):
    """Internal: an observation does not have the structure ``observe`` produces."""


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
    mistake = next((m for needle, m in _ERROR_MISTAKES[ex] if needle in text), None)
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
        raise _Fail("raised_error", stage=f"running {SIGNATURES[ex]}", **details)
    raise _Fail(mistake, **details)


_GRAD_CALL = re.compile(r"grad\(\s*(?:outputs\s*=\s*)?[^,()]+(?:\([^()]*\))?\s*,\s*(?:inputs\s*=\s*)?[(\[]?\s*"
                        r"(?P<name>[A-Za-z_]\w*)\s*[,)\]]")


def _grad_input_name(code: str) -> str:
    """The tensor the student's line differentiates with respect to (``grad(g, y, ...)`` -> ``y``), or ''."""
    match = _GRAD_CALL.search(code or "")
    return match.group("name") if match else ""


def _as_result(result: Any, shape: torch.Size, wrong_shape: str, **shape_fields: Any) -> torch.Tensor:
    """Check that the recorded ``result`` is a tensor of ``shape``; return its value as float64.

    ``wrong_shape`` is the exercise's mistake id for a tensor of another shape."""
    kind = _str_field(result, "kind")
    wanted = f"a tensor of shape {_fmt_shape(shape)}"
    if kind == "none":
        raise _Fail("returned_none", expected=wanted, received="None")
    if kind == "sequence":
        items = _field(result, "items")
        if not isinstance(items, list) or not all(type(i) is str for i in items):
            raise _Malformed("'items' is not a list of type names")
        kind_name = _first_line(_str_field(result, "type") or "", 100)
        inner = ", ".join(_first_line(i, 100) for i in items)
        raise _Fail("returned_tuple", type=kind_name, items=inner, expected=wanted,
                    received=f"a {kind_name} ({inner})")
    if kind == "other":
        kind_name = _first_line(_str_field(result, "type") or "", 100)
        raise _Fail("returned_not_a_tensor", type=kind_name, expected=f"a torch.Tensor of shape {_fmt_shape(shape)}",
                    received=f"a {kind_name}")
    if kind == "unreadable":
        kind_name = _first_line(_str_field(result, "type") or "", 100)
        raise _Fail("returned_unreadable_tensor", type=kind_name,
                    expected=f"a plain torch.Tensor of shape {_fmt_shape(shape)}", received=f"a {kind_name}")
    if kind != "tensor":
        raise _Malformed(f"unknown result kind {_first_line(kind or '', 40)!r}")
    value = _tensor_field(result, "value")
    if value.shape != shape:
        raise _Fail(wrong_shape, received_shape=tuple(value.shape), expected_shape=tuple(shape),
                    expected=f"shape {_fmt_shape(shape)}", received=f"shape {_fmt_shape(value.shape)}", **shape_fields)
    if not (value.is_floating_point() or value.is_complex()):
        raise _Fail("returned_integer_tensor", dtype=str(value.dtype), expected="a float64 tensor",
                    received=f"a {value.dtype} tensor")
    return value.to(DTYPE)


def _result_value(result: Any) -> torch.Tensor | None:
    """The recorded tensor value of ``result``, or None when the function did not return a tensor."""
    if _str_field(result, "kind") != "tensor":
        return None
    return _tensor_field(result, "value")


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a, b, rtol=RTOL, atol=ATOL))


def _difference(name: str, expected: torch.Tensor | None, received: torch.Tensor | None,
                exact: bool = False) -> dict[str, str]:
    """where/expected/received of the first element where ``received`` differs from ``expected``
    (``exact``: any change counts; otherwise beyond the checks' tolerance)."""
    if expected is None or received is None:
        def describe(t: torch.Tensor | None) -> str:
            return "None" if t is None else f"a tensor of shape {_fmt_shape(t.shape)}"
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


def _rand(gen: torch.Generator, *shape: int, low: float = -2.0, high: float = 2.0) -> torch.Tensor:
    return torch.rand(*shape, generator=gen, dtype=DTYPE) * (high - low) + low


def _leaf(t: torch.Tensor) -> torch.Tensor:
    return t.detach().clone().requires_grad_(True)


def _grad_changed(name: str, before: torch.Tensor | None, after: torch.Tensor | None) -> dict[str, str] | None:
    """How a ``.grad`` changed during the student's call (where/expected/received), or None if it did not."""
    if _same(before, after):
        return None
    return _difference(name, before, after, exact=True)


# ---------------------------------------------------------------------------------------------
# exercise "vjp": vector_jacobian_product(f, x, v)


@dataclass(frozen=True)
class _VjpProbe:
    desc: str
    f: Callable[[torch.Tensor], torch.Tensor]
    x: torch.Tensor
    v: torch.Tensor


def _vjp_probes(sizes: Sequence[int], seed: int) -> list[_VjpProbe]:
    gen = torch.Generator().manual_seed(seed)
    probes: list[_VjpProbe] = []
    for n in sizes:
        x = _rand(gen, n)
        probes.append(_VjpProbe(f"f(x) = sin(x) * x, x of shape ({n},)", lambda t: torch.sin(t) * t, x, _rand(gen, n)))
        a = _rand(gen, n + 2, n)
        probes.append(
            _VjpProbe(
                f"f(x) = A @ tanh(x) with A of shape ({n + 2}, {n}), x of shape ({n},)",
                lambda t, a=a: a @ torch.tanh(t),
                _rand(gen, n),
                _rand(gen, n + 2),
            )
        )
        b = _rand(gen, n, 4)
        probes.append(
            _VjpProbe(
                f"f(x) = (x ** 2) @ B with B of shape ({n}, 4), x of shape (2, {n})",
                lambda t, b=b: (t**2) @ b,
                _rand(gen, 2, n),
                _rand(gen, 2, 4),
            )
        )
    return probes


def _vjp_reference(p: _VjpProbe, v: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(vᵀJ, J) of ``p.f`` at ``p.x`` from the full Jacobian (float64)."""
    jac = jacobian(p.f, p.x.detach())
    out_numel = v.numel() if v is not None else p.v.numel()
    flat = jac.reshape(out_numel, p.x.numel())
    weights = (p.v if v is None else v).reshape(-1)
    return (weights @ flat).reshape(p.x.shape), jac


def _observe_vjp(fn: Callable[..., Any], p: _VjpProbe, stale: torch.Tensor | None) -> Obs:
    """Call the student's vjp on a fresh copy of the probe; record the result, x and x.grad before/after."""
    x = _leaf(p.x)
    if stale is not None:
        x.grad = stale.clone()
    obs: Obs = {"x_grad_before": _grad_record(x)}
    error, result = _invoke(fn, (p.f, x, p.v.clone()))
    if error is not None:
        obs["error"] = error
    else:
        obs["result"] = _result_record(result)
    obs["x_after"] = _plain(x)
    obs["x_grad_after"] = _grad_record(x)
    return obs


def _judge_vjp(p: _VjpProbe, result: Any) -> None:
    expected, jac = _vjp_reference(p)
    value = _result_value(result)
    if value is not None and value.shape == jac.shape and value.shape != p.x.shape:
        raise _Fail("vjp_returned_jacobian", received_shape=tuple(value.shape), expected_shape=tuple(p.x.shape),
                    expected=f"shape {_fmt_shape(p.x.shape)}", received=f"shape {_fmt_shape(value.shape)}")
    if (value is not None and value.dim() == 2 and value.t().shape == p.x.shape and value.is_floating_point()
            and _close(value.t().to(DTYPE), expected) and not _close(value.to(DTYPE), expected)):
        raise _Fail("vjp_transposed", received_shape=tuple(value.shape), expected_shape=tuple(p.x.shape),
                    expected=f"shape {_fmt_shape(p.x.shape)}", received=f"shape {_fmt_shape(value.shape)}, its "
                    "transpose is right")
    got = _as_result(result, p.x.shape, "vjp_wrong_shape", output_shape=tuple(p.v.shape))
    if _close(got, expected):
        return
    ones_version, _ = _vjp_reference(p, torch.ones_like(p.v))
    if _close(got, ones_version):
        mistake = "vjp_ones_as_grad_outputs"
    elif _close(got, -expected):
        mistake = "vjp_wrong_sign"
    else:
        mistake = "vjp_wrong"
    raise _Fail(mistake, **_mismatch(got, expected))


def _judge_x_probe(exercise: str, keeps_grad_check: str, changed_mistake: str,
                   judge_result: Callable[[Any, Any], None]) -> Callable[..., None]:
    """The per-probe judge of an exercise whose function takes x: it must raise nothing, leave x alone,
    find x.grad as the grader set it, (for ``keeps_grad_check``) leave x.grad alone, and return the right result."""

    def judge(check: str, p: Any, stale: torch.Tensor | None, obs: Obs) -> None:
        _fail_if_raised(exercise, obs)
        _fail_if_modified("x", p.x, _tensor_field(obs, "x_after"))
        _expect_grad_before(obs, "x_grad_before", stale)
        grad_after = _grad_field(obs, "x_grad_after", p.x.shape)
        if check == keeps_grad_check:
            changed = _grad_changed("x.grad", stale, grad_after)
            if changed:
                raise _Fail(changed_mistake, **changed)
        judge_result(p, _field(obs, "result"))

    return judge


def _vjp_setup(args: dict[str, Any]) -> list[tuple[_VjpProbe, torch.Tensor | None]]:
    return [(p, None) for p in _vjp_probes(args["sizes"], args["seed"])]


def _with_stale_grads(make_probes: Callable[[Any, int], list[Any]]) -> Callable[[dict[str, Any]], list[Any]]:
    """Probes of which every second one starts with a stale x.grad the student's function must not touch."""

    def setup(args: dict[str, Any]) -> list[tuple[Any, torch.Tensor | None]]:
        probes = make_probes(args["sizes"], args["seed"] + 1000)
        gen = torch.Generator().manual_seed(args["seed"] + 2000)
        return [(p, None if i % 2 == 0 else _rand(gen, *p.x.shape, low=5.0, high=9.0)) for i, p in enumerate(probes)]

    return setup


# ---------------------------------------------------------------------------------------------
# exercise "accumulate": mean_gradient_over_batches(loss_fn, w, batches)


@dataclass(frozen=True)
class _BatchProbe:
    desc: str
    loss_fn: Callable[[torch.Tensor, Any], torch.Tensor]
    w: torch.Tensor
    batches: tuple[tuple[torch.Tensor, torch.Tensor], ...]


def _mse(w: torch.Tensor, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    features, targets = batch
    return ((features @ w - targets) ** 2).mean()


def _logistic(w: torch.Tensor, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    features, labels = batch
    return torch.nn.functional.softplus(-labels * (features @ w)).mean()


def _batch_probes(sizes: Sequence[int], n_batches: int, seed: int) -> list[_BatchProbe]:
    gen = torch.Generator().manual_seed(seed)
    probes: list[_BatchProbe] = []
    for n in sizes:
        for name, loss_fn in (("mean((X @ w - y) ** 2)", _mse), ("mean(softplus(-y * (X @ w)))", _logistic)):
            batches = []
            for k in range(n_batches):
                rows = 2 + (k % 3)
                features = _rand(gen, rows, n)
                targets = _rand(gen, rows) if loss_fn is _mse else torch.where(_rand(gen, rows) > 0, 1.0, -1.0).to(DTYPE)
                batches.append((features, targets))
            probes.append(
                _BatchProbe(
                    f"loss_fn(w, (X, y)) = {name}, w of shape ({n},), {n_batches} batches",
                    loss_fn,
                    _rand(gen, n),
                    tuple(batches),
                )
            )
    return probes


def _batch_grads(p: _BatchProbe) -> list[torch.Tensor]:
    """Gradient of each batch's loss separately (float64 reference)."""
    w = p.w.detach()
    return [jacobian(lambda t, b=b: p.loss_fn(t, b), w) for b in p.batches]


def _run_accumulate(fn: Callable[..., Any], p: _BatchProbe, stale: torch.Tensor | None) -> Obs:
    """Call the student's function with a loss_fn that records forward/backward order per batch.

    Records the result, w and w.grad before/after, the events, whether the result IS w.grad, and the
    result's values after w.grad.zero_() (what the next training step does to w.grad).
    """
    w = _leaf(p.w)
    if stale is not None:
        w.grad = stale.clone()
    obs: Obs = {"w_grad_before": _grad_record(w)}
    index_of = {id(b): k for k, b in enumerate(p.batches)}
    events: list[tuple[str, int]] = []

    def tracked_loss(w_arg: torch.Tensor, batch: Any) -> torch.Tensor:
        k = index_of.get(id(batch), -1)
        loss = p.loss_fn(w_arg, batch)
        events.append(("forward", k))
        if loss.requires_grad:  # (the hook is reachable from the loss: loss._backward_hooks)
            loss.register_hook(_opaque(lambda grad, k=k: events.append(("backward", k))))
        return loss

    error, result = _invoke(fn, (_opaque(tracked_loss), w, list(p.batches)))
    if error is not None:
        obs["error"] = error
    else:
        obs["result"] = _result_record(result)
    obs["events"] = [[str(kind), int(k)] for kind, k in list(events)]
    obs["w_after"] = _plain(w)
    obs["w_requires_grad"] = bool(w.requires_grad)
    grad = w.grad
    obs["w_grad_after"] = None if grad is None else _plain(grad)
    obs["aliases_w_grad"] = error is None and isinstance(result, torch.Tensor) and result is grad
    obs["value_after_zeroing_w_grad"] = None
    if error is None and obs["result"]["kind"] == "tensor":
        if grad is not None:
            with torch.no_grad():
                grad.zero_()
        obs["value_after_zeroing_w_grad"] = _plain(result)
    return obs


def _judge_accumulate(p: _BatchProbe, result: Any, stale: torch.Tensor | None) -> None:
    per_batch = _batch_grads(p)
    n = len(per_batch)
    total = torch.stack(per_batch).sum(0)
    expected = total / n
    got = _as_result(result, p.w.shape, "accumulate_wrong_shape")
    if _close(got, expected):
        return
    last = "∇ loss_fn(w, batches[-1])"
    candidates: list[tuple[torch.Tensor, str, dict[str, Any]]] = [
        (total, "accumulate_sum_not_mean", {}),
        (expected / n, "accumulate_divided_twice", {}),
        (per_batch[-1], "accumulate_reset_in_loop", {"formula": last}),
        (per_batch[-1] / n, "accumulate_reset_in_loop", {"formula": f"{last} / len(batches)"}),
    ]
    if stale is not None:
        candidates += [(c, "accumulate_stale_grad_kept", {})
                       for c in (expected + stale, expected + stale / n, total + stale, (total + stale) / n)]
    mistake, fields = next(((m, f) for c, m, f in candidates if _close(got, c)), ("accumulate_wrong", {}))
    raise _Fail(mistake, **fields, **_mismatch(got, expected))


def _events(obs: Obs) -> list[tuple[str, int]]:
    raw = _field(obs, "events")
    if not isinstance(raw, list):
        raise _Malformed(f"'events' is a {_type_name(raw)}, not a list")
    events: list[tuple[str, int]] = []
    for event in raw:
        if (not isinstance(event, (list, tuple)) or len(event) != 2 or type(event[0]) is not str
                or event[0] not in ("forward", "backward") or type(event[1]) is not int):
            raise _Malformed("'events' holds an entry that is not [\"forward\" or \"backward\", batch index]")
        events.append((event[0], event[1]))
    return events


def _judge_one_backward_per_batch(p: _BatchProbe, events: list[tuple[str, int]]) -> None:
    n = len(p.batches)
    first_forward = {k: events.index(("forward", k)) for k in range(n) if ("forward", k) in events}
    first_backward = {k: events.index(("backward", k)) for k in range(n) if ("backward", k) in events}
    missing = [k for k in range(n) if k not in first_backward]
    if missing:
        raise _Fail("accumulate_no_backward", batch=missing[0])
    for k in range(1, n):
        if k in first_forward and first_forward[k] < first_backward[k - 1]:
            raise _Fail("accumulate_one_backward_for_all", batch=k, previous=k - 1)


def _judge_returns_own_copy(p: _BatchProbe, result: Any, aliases: bool, after_zeroing: torch.Tensor | None) -> None:
    value = _result_value(result)
    if value is None or after_zeroing is None:  # _judge_accumulate accepted a tensor, so both were recorded
        raise _Malformed("'value_after_zeroing_w_grad' is missing for a tensor result")
    if aliases or not _same(after_zeroing, value):
        changed = _difference("result", value, after_zeroing, exact=True) if not _same(after_zeroing, value) else {}
        if changed:
            changed["where"] += " after w.grad.zero_()"
        raise _Fail("accumulate_returns_alias", **changed)


def _judge_accumulate_probe(check: str, p: _BatchProbe, stale: torch.Tensor | None, obs: Obs) -> None:
    _fail_if_raised("accumulate", obs)
    _fail_if_modified("w", p.w, _tensor_field(obs, "w_after"), _bool_field(obs, "w_requires_grad"))
    # Every fact is read (and so validated) whichever check this is; each check judges its own.
    _expect_grad_before(obs, "w_grad_before", stale)
    _grad_field(obs, "w_grad_after", p.w.shape)  # for the record: the returned value is what is graded
    events = _events(obs)
    aliases = _bool_field(obs, "aliases_w_grad")
    after_zeroing = _optional_tensor_field(obs, "value_after_zeroing_w_grad")
    result = _field(obs, "result")
    value = _result_value(result)
    if (after_zeroing is None) != (value is None) or (value is not None and after_zeroing.shape != value.shape):
        raise _Malformed("'value_after_zeroing_w_grad' does not match the returned tensor")
    _judge_accumulate(p, result, stale)
    if check == "check_mean_gradient":
        _judge_one_backward_per_batch(p, events)
    if check == "check_mean_gradient_copy":
        _judge_returns_own_copy(p, result, aliases, after_zeroing)


def _batch_setup(offset: int, stale_grad: bool) -> Callable[[dict[str, Any]], list[tuple[_BatchProbe, torch.Tensor | None]]]:
    def setup(args: dict[str, Any]) -> list[tuple[_BatchProbe, torch.Tensor | None]]:
        probes = _batch_probes(args["sizes"], args["n_batches"], args["seed"] + offset)
        if not stale_grad:
            return [(p, None) for p in probes]
        gen = torch.Generator().manual_seed(args["seed"] + 2000)
        return [(p, _rand(gen, *p.w.shape, low=3.0, high=6.0)) for p in probes]

    return setup


# ---------------------------------------------------------------------------------------------
# exercise "secondderiv": second_derivative(f, x)


@dataclass(frozen=True)
class _ElementwiseProbe:
    desc: str
    f: Callable[[torch.Tensor], torch.Tensor]
    x: torch.Tensor


_ELEMENTWISE: tuple[tuple[str, Callable[[torch.Tensor], torch.Tensor]], ...] = (
    ("x ** 3", lambda t: t**3),
    ("sin(x) * x", lambda t: torch.sin(t) * t),
    ("exp(-x ** 2)", lambda t: torch.exp(-t * t)),
)


def _second_probes(sizes: Sequence[int], seed: int) -> list[_ElementwiseProbe]:
    gen = torch.Generator().manual_seed(seed)
    probes = []
    for n in sizes:
        for name, f in _ELEMENTWISE:
            probes.append(_ElementwiseProbe(f"f(x) = {name}, x of shape ({n},)", f, _rand(gen, n)))
    return probes


def _general_probes(sizes: Sequence[int], seed: int) -> list[_ElementwiseProbe]:
    gen = torch.Generator().manual_seed(seed)
    probes = [_ElementwiseProbe("f(x) = x ** 3, x = 2.0 (a 0-d tensor)", _ELEMENTWISE[0][1], torch.tensor(2.0, dtype=DTYPE))]
    for n in sizes:
        probes.append(_ElementwiseProbe(f"f(x) = sin(x) * x, x of shape (2, {n})", _ELEMENTWISE[1][1], _rand(gen, 2, n)))
        probes.append(_ElementwiseProbe(f"f(x) = exp(-x ** 2), x of shape ({n}, 1, 2)", _ELEMENTWISE[2][1], _rand(gen, n, 1, 2)))
    return probes


def _elementwise_derivatives(p: _ElementwiseProbe) -> tuple[torch.Tensor, torch.Tensor]:
    """(f'(x), f''(x)) elementwise, from the diagonals of the Jacobian and Hessian of sum(f)."""
    x = p.x.detach()
    n = x.numel()
    first = jacobian(lambda t: p.f(t).sum(), x).reshape(x.shape)
    second = hessian(lambda t: p.f(t).sum(), x).reshape(n, n).diagonal().reshape(x.shape)
    return first, second


def _parameter_name(fn: Any, position: int) -> str | None:
    """The name the student's plain Python function gives its parameter at ``position`` (e.g. x), if it is one."""
    if type(fn) is not types.FunctionType:
        return None
    code = fn.__code__
    return str(code.co_varnames[position]) if code.co_argcount > position else None


def _observe_second(fn: Callable[..., Any], p: _ElementwiseProbe, stale: torch.Tensor | None) -> Obs:
    """Call the student's second_derivative; record the result, x and x.grad before/after."""
    x = _leaf(p.x)
    if stale is not None:
        x.grad = stale.clone()
    obs: Obs = {"x_grad_before": _grad_record(x)}
    error, result = _invoke(fn, (p.f, x))
    if error is not None:
        error["x_name"] = _parameter_name(fn, 1)  # for naming a grad call with respect to another tensor
        obs["error"] = error
    else:
        obs["result"] = _result_record(result)
    obs["x_after"] = _plain(x)
    obs["x_grad_after"] = _grad_record(x)
    return obs


def _judge_second(p: _ElementwiseProbe, result: Any) -> None:
    first, expected = _elementwise_derivatives(p)
    got = _as_result(result, p.x.shape, "second_wrong_shape")
    if _close(got, expected):
        return
    if _close(got, first):
        raise _Fail("second_returned_first_derivative", **_mismatch(got, expected))
    for factor, scaled in (("2", 2 * expected), ("1/2", expected / 2)):
        if _close(got, scaled):
            raise _Fail("second_off_by_factor_two", factor=factor, **_mismatch(got, expected))
    raise _Fail("second_wrong", **_mismatch(got, expected))


def _second_setup(args: dict[str, Any]) -> list[tuple[_ElementwiseProbe, torch.Tensor | None]]:
    return [(p, None) for p in _second_probes(args["sizes"], args["seed"])]


# ---------------------------------------------------------------------------------------------
# the registry, observe (student side) and judge (trusted side)


@dataclass(frozen=True)
class _Check:
    exercise: str
    defaults: dict[str, Any]
    setup: Callable[[dict[str, Any]], list[tuple[Any, torch.Tensor | None]]]  # (probe, stale .grad or None)
    observe_one: Callable[[Callable[..., Any], Any, torch.Tensor | None], Obs]
    judge_one: Callable[[str, Any, torch.Tensor | None, Obs], None]
    summary: str  # formatted with n, the number of probes
    uses_namespace: bool = False  # observe_one also gets the notebook's namespace (its own Functions)


_DEFAULTS = {"sizes": (3,), "seed": 0}
_BATCH_DEFAULTS = {"sizes": (3,), "n_batches": 4, "seed": 0}

#: Every public check, by name: the exercise, its keyword arguments with defaults, how it observes and judges.
_JUDGE_VJP = _judge_x_probe("vjp", "check_vjp_keeps_grad", "vjp_changed_x_grad", _judge_vjp)
_JUDGE_SECOND = _judge_x_probe("secondderiv", "check_second_derivative_general", "second_changed_x_grad", _judge_second)

CHECKS: dict[str, _Check] = {
    "check_vjp": _Check("vjp", _DEFAULTS, _vjp_setup, _observe_vjp, _JUDGE_VJP,
                        "vjp: matches vᵀJ on {n} probes"),
    "check_vjp_keeps_grad": _Check("vjp", _DEFAULTS, _with_stale_grads(_vjp_probes), _observe_vjp, _JUDGE_VJP,
                                   "vjp: x.grad left untouched and vᵀJ correct on {n} probes"),
    "check_mean_gradient": _Check("accumulate", _BATCH_DEFAULTS, _batch_setup(0, stale_grad=False), _run_accumulate,
                                  _judge_accumulate_probe,
                                  "accumulate: mean gradient correct, one backward per batch, on {n} probes"),
    "check_mean_gradient_stale": _Check("accumulate", _BATCH_DEFAULTS, _batch_setup(1000, stale_grad=True),
                                        _run_accumulate, _judge_accumulate_probe,
                                        "accumulate: stale w.grad ignored on {n} probes"),
    "check_mean_gradient_copy": _Check("accumulate", _BATCH_DEFAULTS, _batch_setup(3000, stale_grad=False),
                                       _run_accumulate, _judge_accumulate_probe,
                                       "accumulate: returns its own copy, not w.grad, on {n} probes"),
    "check_second_derivative": _Check("secondderiv", _DEFAULTS, _second_setup, _observe_second, _JUDGE_SECOND,
                                      "secondderiv: matches f''(x) on {n} probes"),
    "check_second_derivative_general": _Check("secondderiv", _DEFAULTS, _with_stale_grads(_general_probes), _observe_second,
                                              _JUDGE_SECOND,
                                              "secondderiv: any shape (0-d to 3-d) and x.grad untouched, on {n} probes"),
}


def _spec(check: str) -> _Check:
    if not isinstance(check, str) or check not in CHECKS:
        raise ValueError(f"unknown check {check!r}; the checks are: {', '.join(CHECKS)}")
    return CHECKS[check]


def _arguments(check: str, spec: _Check, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The check's keyword arguments with defaults filled in, normalised (both sides build the same probes)."""
    unknown = sorted(set(kwargs) - set(spec.defaults))
    if unknown:
        raise TypeError(f"{check}() got an unexpected keyword argument {unknown[0]!r}")
    args = {**spec.defaults, **kwargs}
    args["sizes"] = tuple(int(n) for n in args["sizes"])
    args["seed"] = int(args["seed"])
    if "n_batches" in args:
        args["n_batches"] = int(args["n_batches"])
    return args


def observe(check: str, fn: Callable[..., Any], namespace: dict[str, Any] | None = None, **kwargs: Any) -> list[Obs]:
    """Student side: run ``fn`` on the probes of ``check`` and return plain-data observations, one per probe.

    ``kwargs`` are the public check's (``sizes``, ``seed``, ``n_batches``), with the same defaults; ``namespace``
    (the notebook's variables) is given to checks whose probes use the student's own Functions. Errors
    raised by ``fn`` are recorded, not raised; warnings are swallowed. Nothing here decides pass or fail.
    """
    spec = _spec(check)
    setups = spec.setup(_arguments(check, spec, kwargs))
    observations: list[Obs] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, (probe, stale) in enumerate(setups):
            try:
                obs = (spec.observe_one(fn, probe, stale, namespace) if spec.uses_namespace  # type: ignore[call-arg]
                       else spec.observe_one(fn, probe, stale))
            except Exception as exc:  # e.g. a tensor the student's code made unreadable: judged as malformed
                obs = {"observer_error": f"{_type_name(exc)}: {_first_line(_text(exc))}"}
            observations.append({"check": check, "probe": i, **obs})
    return observations


def _judge_all(check: str, spec: _Check, args: dict[str, Any], observations: Any) -> str:
    setups = spec.setup(args)
    if not isinstance(observations, (list, tuple)):
        raise _Fail("malformed_observations",
                    why=f"expected a list of observations, received a {_type_name(observations)}")
    if len(observations) != len(setups):
        raise _Fail("malformed_observations",
                    why=f"expected {len(setups)} observations (one per probe), received {len(observations)}")
    notes: list[str] = []
    for i, ((probe, stale), obs) in enumerate(zip(setups, observations, strict=True)):
        try:
            if not isinstance(obs, dict):
                raise _Malformed(f"observation {i} is a {_type_name(obs)}, not a dict")
            if obs.get("check") != check or type(obs.get("probe")) is not int or obs.get("probe") != i:
                raise _Malformed(f"observation {i} is not the observation of probe {i} of {check}")
            note = spec.judge_one(check, probe, stale, obs)
            if isinstance(note, str) and note not in notes:
                notes.append(note)  # a probe not counted, and why (notebook 4: an unfit Function of the student's)
        except _Fail as failure:
            failure.probe = probe.desc
            raise
        except _Malformed as bad:
            raise _Fail("malformed_observations", probe=probe.desc, why=_first_line(str(bad))) from None
        except Exception as exc:  # data nothing above anticipated (or a bug of ours): never a pass
            raise _Fail("malformed_observations", probe=probe.desc,
                        why=f"{_type_name(exc)}: {_first_line(_text(exc))}") from None
    summary = spec.summary.format(n=len(setups))
    return "; ".join([summary, *notes])


def judge(check: str, observations: list[Obs], **kwargs: Any) -> str:
    """Trusted side: judge ``observations`` of ``check`` against references rebuilt here from ``kwargs``.

    Returns the one-line summary printed after ``✓ `` on success; raises ``CheckFailed`` (an
    ``AssertionError`` whose ``.finding.mistake`` is a key of ``MISTAKES``) otherwise. Never runs student
    code and never trusts the observations: anything malformed fails the check.
    """
    spec = _spec(check)
    args = _arguments(check, spec, kwargs)
    finding: Finding | None = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            summary = _judge_all(check, spec, args, observations)
        except _Fail as failure:
            finding = _finding(check, spec.exercise, failure)
        except Exception as exc:  # a bug of ours: a precise message, never a pass
            finding = _finding(check, spec.exercise, _Fail("grader_error", error_type=_type_name(exc),
                                                           error=_first_line(_text(exc))))
    if finding is not None:
        raise CheckFailed(finding)  # raised outside the handlers: no chained context in the traceback
    return summary


# ---------------------------------------------------------------------------------------------
# the public checks, one per graded test cell


@_student_facing
def check_vjp(fn: Callable[..., Any], sizes: Sequence[int] = (3,), seed: int = 0) -> None:
    """Check ``fn(f, x, v)`` returns vᵀJ (J = Jacobian of f at x) on three probe functions per size.

    Probes: an elementwise f, a matrix map to a longer vector and a 2-D input.
    """
    kw = {"sizes": sizes, "seed": seed}
    print("✓ " + judge("check_vjp", observe("check_vjp", fn, **kw), **kw))


@_student_facing
def check_vjp_keeps_grad(fn: Callable[..., Any], sizes: Sequence[int] = (3,), seed: int = 0) -> None:
    """Check ``fn(f, x, v)`` leaves ``x.grad`` untouched (None, or the caller's stale values) and is correct."""
    kw = {"sizes": sizes, "seed": seed}
    print("✓ " + judge("check_vjp_keeps_grad", observe("check_vjp_keeps_grad", fn, **kw), **kw))


@_student_facing
def check_mean_gradient(fn: Callable[..., Any], sizes: Sequence[int] = (3,), n_batches: int = 4, seed: int = 0) -> None:
    """Check ``fn(loss_fn, w, batches)`` returns the mean-loss gradient with one backward per batch (w.grad None on entry)."""
    kw = {"sizes": sizes, "n_batches": n_batches, "seed": seed}
    print("✓ " + judge("check_mean_gradient", observe("check_mean_gradient", fn, **kw), **kw))


@_student_facing
def check_mean_gradient_stale(fn: Callable[..., Any], sizes: Sequence[int] = (3,), n_batches: int = 4, seed: int = 0) -> None:
    """Check ``fn(loss_fn, w, batches)`` is correct when ``w.grad`` holds stale values on entry."""
    kw = {"sizes": sizes, "n_batches": n_batches, "seed": seed}
    print("✓ " + judge("check_mean_gradient_stale", observe("check_mean_gradient_stale", fn, **kw), **kw))


@_student_facing
def check_mean_gradient_copy(fn: Callable[..., Any], sizes: Sequence[int] = (3,), n_batches: int = 4, seed: int = 0) -> None:
    """Check the tensor ``fn`` returns is its own copy: zeroing ``w.grad`` afterwards must not change it."""
    kw = {"sizes": sizes, "n_batches": n_batches, "seed": seed}
    print("✓ " + judge("check_mean_gradient_copy", observe("check_mean_gradient_copy", fn, **kw), **kw))


@_student_facing
def check_second_derivative(fn: Callable[..., Any], sizes: Sequence[int] = (3,), seed: int = 0) -> None:
    """Check ``fn(f, x)`` returns the elementwise f''(x) for three elementwise functions on 1-D x."""
    kw = {"sizes": sizes, "seed": seed}
    print("✓ " + judge("check_second_derivative", observe("check_second_derivative", fn, **kw), **kw))


@_student_facing
def check_second_derivative_general(fn: Callable[..., Any], sizes: Sequence[int] = (3,), seed: int = 0) -> None:
    """Check ``fn(f, x)`` works for 0-d and multi-dimensional x and leaves ``x.grad`` as it was."""
    kw = {"sizes": sizes, "seed": seed}
    print("✓ " + judge("check_second_derivative_general", observe("check_second_derivative_general", fn, **kw), **kw))


# Notebook 4's function exercises (hvp, penalty) live in their own module, which registers them here when it is
# imported (``secondorder._register``), so that test cells call them as basics.check_hvp(...) and the sandbox and the
# judge treat them like every check above. Whichever of the two modules is imported first, both end up complete.
from grader import secondorder as _secondorder  # noqa: E402,F401
