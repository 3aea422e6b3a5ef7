"""Checks for the graded exercises of notebook 1, "Autograd basics".

One public ``check_*`` function per graded test cell. Each one

- calls the student's function on small float64 probe inputs built from ``seed``,
- compares with a reference computed by PyTorch itself (``torch.autograd.functional``),
- on failure raises ``AssertionError`` with a short message a student can act on
  (what was called, the first wrong element, a hint naming the likely mistake and the
  notebook section to re-read), never a traceback of grader internals,
- on success prints a single line starting with ``✓``.

Every check has two halves, as in ``grader.observe`` / ``grader.checks``:

- ``observe(check, fn, **kwargs)`` runs next to the student's code: it calls ``fn`` on the probes
  and records what happened as plain data (dicts, lists, strings, numbers, booleans, None and
  detached tensors): the returned value, the error raised, ``x``/``w`` and their ``.grad`` before and
  after the call, the forward/backward order of the batches, whether the result aliases ``w.grad``.
  It decides nothing.
- ``judge(check, observations, **kwargs)`` runs in the trusted process and never runs student code:
  it rebuilds the same probes from the same keyword arguments (seeded generators), computes the
  references itself and returns the one-line summary or raises ``AssertionError``. Observations may
  be forged or malformed: anything unexpected fails the check with a clear message, never passes it.

A public check is exactly ``print("✓ " + judge(name, observe(name, fn, **kw), **kw))``.

Nothing here imports nbgrader or Jupyter, prints to stderr or lets a warning escape:
warnings raised inside the student's code are dropped, because nbgrader scores a cell that
writes to stderr as failed.
"""

from __future__ import annotations

import functools
import os
import sysconfig
import traceback
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar

import torch
from torch.autograd.functional import hessian, jacobian

__all__ = [
    "SECTIONS",
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


class _Fail(Exception):
    """Internal: a student-facing failure message; turned into AssertionError at the check's boundary."""


def _student_facing(check: _F) -> _F:
    """Turn internal ``_Fail`` into a plain ``AssertionError`` raised from the check itself (short traceback)."""

    @functools.wraps(check)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            check(*args, **kwargs)
        except _Fail as failure:
            message = str(failure)
        else:
            return
        raise AssertionError(message)

    return wrapper  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------
# message helpers


def _see(ex: str) -> str:
    return f'(see section "{SECTIONS[ex]}")'


def _message(ex: str, headline: str, details: Sequence[str], hint: str) -> str:
    lines = [f"{ex}: your {SIGNATURES[ex]} {headline}"]
    lines += [f"  {d}" for d in details]
    lines.append(f"  Hint: {hint} {_see(ex)}")
    return "\n".join(lines)


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


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


# Known PyTorch error messages -> (what it means, how to fix it), per exercise.
_ERROR_HINTS: dict[str, list[tuple[str, str]]] = {
    "vjp": [
        (
            "grad can be implicitly created only for scalar outputs",
            "f(x) is not a scalar, so autograd needs to know how to weight its entries: pass "
            "grad_outputs=v to torch.autograd.grad.",
        ),
        (
            "Mismatch in shape",
            "grad_outputs must have the shape of the OUTPUT f(x), not of x; v already has that shape, "
            "so pass grad_outputs=v.",
        ),
        (
            "does not require grad",
            "f(x) has no graph back to x: do not detach x or wrap the forward pass in torch.no_grad().",
        ),
    ],
    "accumulate": [
        (
            "'NoneType' object has no attribute",
            "w.grad is None until the first backward (and may be None on entry). Reset it with "
            "`w.grad = None` instead of `w.grad.zero_()`, or guard with `if w.grad is not None:`.",
        ),
        (
            "Trying to backward through the graph a second time",
            "each loss can be backpropagated once: compute a fresh loss_fn(w, batch) for every backward.",
        ),
        (
            "does not require grad",
            "the loss has no graph back to w: do not detach w or compute the loss under torch.no_grad().",
        ),
        (
            "grad can be implicitly created only for scalar outputs",
            "call .backward() on the 0-d loss returned by loss_fn, not on a stacked tensor of losses.",
        ),
        (
            "leaf Variable that requires grad is being used in an in-place operation",
            "do not change w in place; this function only computes a gradient, it takes no optimizer step.",
        ),
    ],
    "secondderiv": [
        (
            "does not require grad",
            "the first derivative is a plain tensor unless you ask autograd to record how it was computed: "
            "pass create_graph=True to the FIRST torch.autograd.grad call.",
        ),
        (
            "Trying to backward through the graph a second time",
            "the first grad call freed the graph; pass create_graph=True to it (that also keeps the graph).",
        ),
        (
            "grad can be implicitly created only for scalar outputs",
            "f(x) and f'(x) are tensors, not scalars: pass grad_outputs=torch.ones_like(...) to BOTH grad "
            "calls (this gives elementwise derivatives because f is elementwise).",
        ),
        (
            "Mismatch in shape",
            "grad_outputs must have the shape of the tensor you differentiate (use torch.ones_like of it).",
        ),
    ],
}

_GENERIC_HINT = {
    "vjp": "compute out = f(x), then torch.autograd.grad(out, x, grad_outputs=v) and return its [0].",
    "accumulate": "reset w.grad, call loss.backward() once per batch, and return a copy of the averaged w.grad.",
    "secondderiv": "differentiate twice with torch.autograd.grad, the first time with create_graph=True.",
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
        where = _student_line(exc)
    except Exception:
        where = None
    return {"type": _type_name(exc), "not_implemented": isinstance(exc, NotImplementedError),
            "message": _text(exc), "code": where}


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


_NOT_YOUR_ANSWER = ("this is not about your answer: run the cell again, and if this message stays, "
                    "tell your instructor.")


def _malformed(ex: str, context: str, why: str) -> str:
    return _message(ex, f"could not be graded for {context}",
                    [f"the grader received malformed observations: {_first_line(why)}"], _NOT_YOUR_ANSWER)


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


def _fail_if_raised(ex: str, obs: Obs, context: str) -> None:
    """When the student's function raised, fail with the message the error calls for."""
    if not isinstance(obs, dict):
        raise _Malformed(f"an observation is a {_type_name(obs)}, not a dict")
    if "observer_error" in obs:
        raise _Malformed(f"the observer itself failed ({_first_line(str(obs['observer_error']))})")
    if "error" not in obs:
        return
    error = obs["error"]
    name = _first_line(_str_field(error, "type") or "", 100) or "Exception"
    text = _str_field(error, "message") or ""
    code = _str_field(error, "code", optional=True)
    if _bool_field(error, "not_implemented"):
        said = f" ({_first_line(text)})" if text.strip() else ""
        raise _Fail(
            f"{ex}: your {SIGNATURES[ex]} raised NotImplementedError{said}\n"
            f"  It is still the stub: replace the `raise NotImplementedError` line with your code.\n"
            f"  Hint: {_GENERIC_HINT[ex]} {_see(ex)}"
        )
    hint = next((h for key, h in _ERROR_HINTS[ex] if key in text), _GENERIC_HINT[ex])
    details = [f"{name}: {_first_line(text)}"]
    if code:
        details.append(f"in your code, {_first_line(code)}")
    raise _Fail(_message(ex, f"raised an error for {context}", details, hint))


def _as_result(ex: str, result: Any, shape: torch.Size, context: str, wrong_shape_hint: str | None = None) -> torch.Tensor:
    """Check that the recorded ``result`` is a tensor of ``shape``; return its value as float64."""
    kind = _str_field(result, "kind")
    if kind == "none":
        raise _Fail(
            _message(ex, f"returned None for {context}", [f"expected a tensor of shape {_fmt_shape(shape)}"],
                     "did you forget the `return` statement?")
        )
    if kind == "sequence":
        items = _field(result, "items")
        if not isinstance(items, list) or not all(type(i) is str for i in items):
            raise _Malformed("'items' is not a list of type names")
        inner = ", ".join(_first_line(i, 100) for i in items)
        raise _Fail(
            _message(
                ex,
                f"returned a {_first_line(_str_field(result, 'type') or '', 100)} ({inner}) for {context}",
                [f"expected a single tensor of shape {_fmt_shape(shape)}"],
                "torch.autograd.grad returns a tuple with one gradient per input: take its [0], "
                "e.g. `(g,) = torch.autograd.grad(...)`.",
            )
        )
    if kind == "other":
        raise _Fail(
            _message(ex, f"returned a {_first_line(_str_field(result, 'type') or '', 100)} for {context}",
                     [f"expected a torch.Tensor of shape {_fmt_shape(shape)}"], _GENERIC_HINT[ex])
        )
    if kind == "unreadable":
        name = _first_line(_str_field(result, "type") or "", 100)
        raise _Fail(
            _message(ex, f"returned a tensor the grader cannot read ({name}) for {context}",
                     [f"expected a plain torch.Tensor of shape {_fmt_shape(shape)}"], _GENERIC_HINT[ex])
        )
    if kind != "tensor":
        raise _Malformed(f"unknown result kind {_first_line(kind or '', 40)!r}")
    value = _tensor_field(result, "value")
    if value.shape != shape:
        raise _Fail(
            _message(
                ex,
                f"returned the wrong shape for {context}",
                [f"expected shape {_fmt_shape(shape)}, received {_fmt_shape(value.shape)}"],
                wrong_shape_hint or _GENERIC_HINT[ex],
            )
        )
    if not (value.is_floating_point() or value.is_complex()):
        raise _Fail(
            _message(ex, f"returned an integer tensor ({value.dtype}) for {context}",
                     ["expected a float64 tensor"], "return the gradient tensor itself, do not round it.")
        )
    return value.to(DTYPE)


def _result_value(result: Any) -> torch.Tensor | None:
    """The recorded tensor value of ``result``, or None when the function did not return a tensor."""
    if _str_field(result, "kind") != "tensor":
        return None
    return _tensor_field(result, "value")


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a, b, rtol=RTOL, atol=ATOL))


def _first_mismatch(received: torch.Tensor, expected: torch.Tensor) -> str:
    """Describe the first element where ``received`` differs from ``expected``."""
    ok = torch.isclose(received, expected, rtol=RTOL, atol=ATOL)
    bad = (~ok).nonzero()
    if expected.dim() == 0:
        return f"expected {_num(expected.item())}, received {_num(received.item())}"
    index = tuple(int(i) for i in bad[0]) if len(bad) else (0,) * expected.dim()
    return (
        f"at element {_fmt_index(index)}: expected {_num(expected[index].item())}, "
        f"received {_num(received[index].item())}"
    )


def _rand(gen: torch.Generator, *shape: int, low: float = -2.0, high: float = 2.0) -> torch.Tensor:
    return torch.rand(*shape, generator=gen, dtype=DTYPE) * (high - low) + low


def _leaf(t: torch.Tensor) -> torch.Tensor:
    return t.detach().clone().requires_grad_(True)


def _grad_changed(before: torch.Tensor | None, after: torch.Tensor | None) -> str | None:
    """Describe how a ``.grad`` changed during the student's call, or None if it did not."""
    if before is None and after is None:
        return None
    if before is None:
        return "x.grad was None before the call and holds a tensor after it"
    if after is None:
        return "x.grad held the caller's gradient before the call and is None after it"
    if after.shape != before.shape or not torch.equal(after.detach(), before):
        return "x.grad holds different values after the call than before it"
    return None


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
    out_shape = p.v.shape
    value = _result_value(result)
    if value is not None and value.shape == jac.shape and value.shape != p.x.shape:
        raise _Fail(
            _message(
                "vjp",
                f"returned the whole Jacobian for {p.desc}",
                [f"expected vᵀJ of shape {_fmt_shape(p.x.shape)}, received shape {_fmt_shape(value.shape)} "
                 f"(= f(x).shape + x.shape)"],
                "you need the product of v with the Jacobian, not J itself: pass grad_outputs=v to "
                "torch.autograd.grad and it returns vᵀJ directly, without ever building J.",
            )
        )
    got = _as_result(
        "vjp", result, p.x.shape, p.desc,
        wrong_shape_hint=(
            f"the answer has x's shape {_fmt_shape(p.x.shape)} (one entry per input), while f(x) and v have "
            f"shape {_fmt_shape(out_shape)}; differentiate with respect to x."
        ),
    )
    if _close(got, expected):
        return
    ones_version, _ = _vjp_reference(p, torch.ones_like(p.v))
    if _close(got, ones_version):
        hint = ("your answer equals vᵀJ with v = all ones: you used torch.ones_like(...) as grad_outputs. "
                "Pass the given v instead: grad_outputs=v.")
    elif _close(got, -expected):
        hint = "your answer has the wrong sign; return the gradient as torch.autograd.grad gives it."
    else:
        hint = "pass v as grad_outputs= to torch.autograd.grad; it returns vᵀJ = sum_i v[i] * d f(x)[i] / dx."
    raise _Fail(_message("vjp", f"is wrong for {p.desc}", [_first_mismatch(got, expected)], hint))


def _judge_vjp_probe(check: str, p: _VjpProbe, stale: torch.Tensor | None, obs: Obs) -> None:
    _fail_if_raised("vjp", obs, p.desc)
    if not _same(_tensor_field(obs, "x_after"), p.x):
        raise _Fail(
            _message("vjp", f"changed x itself for {p.desc}", ["x holds different values after the call"],
                     "only compute the product; never modify x in place.")
        )
    _expect_grad_before(obs, "x_grad_before", stale)
    grad_after = _grad_field(obs, "x_grad_after", p.x.shape)
    if check == "check_vjp_keeps_grad":
        changed = _grad_changed(stale, grad_after)
        if changed:
            raise _Fail(
                _message(
                    "vjp",
                    f"changed x.grad for {p.desc}",
                    [changed],
                    ".backward() adds into x.grad, which belongs to the caller. torch.autograd.grad(...) "
                    "returns the gradient instead and leaves x.grad alone.",
                )
            )
    _judge_vjp(p, _field(obs, "result"))


def _vjp_setup(args: dict[str, Any]) -> list[tuple[_VjpProbe, torch.Tensor | None]]:
    return [(p, None) for p in _vjp_probes(args["sizes"], args["seed"])]


def _vjp_keeps_grad_setup(args: dict[str, Any]) -> list[tuple[_VjpProbe, torch.Tensor | None]]:
    probes = _vjp_probes(args["sizes"], args["seed"] + 1000)
    gen = torch.Generator().manual_seed(args["seed"] + 2000)
    return [(p, None if i % 2 == 0 else _rand(gen, *p.x.shape, low=5.0, high=9.0)) for i, p in enumerate(probes)]


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
        if loss.requires_grad:
            loss.register_hook(lambda grad, k=k: events.append(("backward", k)))
        return loss

    error, result = _invoke(fn, (tracked_loss, w, list(p.batches)))
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
    got = _as_result(
        "accumulate", result, p.w.shape, p.desc,
        wrong_shape_hint="return the gradient with respect to w (same shape as w), averaged over the batches.",
    )
    if _close(got, expected):
        return
    candidates: list[tuple[torch.Tensor, str]] = [
        (total, "your answer is the SUM of the batch gradients; the task asks for the mean: divide by len(batches)."),
        (expected / n, "your answer is the mean divided by len(batches) once more: divide either each loss or the "
                       "accumulated gradient by len(batches), not both."),
        (per_batch[-1], "your answer is the gradient of the LAST batch only: w.grad was reset inside the loop. "
                        "Reset it once, before the loop, and let the backward calls add up."),
        (per_batch[-1] / n, "your answer is the gradient of the LAST batch only (divided by len(batches)): w.grad "
                            "was reset inside the loop. Reset it once, before the loop, and let the backward calls add up."),
    ]
    if stale is not None:
        stale_hint = ("w.grad held stale values on entry and they ended up in your answer: backward ADDS to w.grad, "
                      "so start with `w.grad = None` (or `w.grad.zero_()` when it is not None).")
        candidates += [(expected + stale, stale_hint), (expected + stale / n, stale_hint),
                       (total + stale, stale_hint), ((total + stale) / n, stale_hint)]
    hint = next((h for c, h in candidates if _close(got, c)), None)
    if hint is None:
        hint = "accumulate with one loss_fn(w, batch).backward() per batch, then average: the result is sum / len(batches)."
    raise _Fail(_message("accumulate", f"is wrong for {p.desc}", [_first_mismatch(got, expected)], hint))


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
        raise _Fail(
            _message(
                "accumulate",
                f"never backpropagated the loss of batch {missing[0]} for {p.desc}",
                ["the answer is right, but not computed by backward calls on the batch losses"],
                "call .backward() on each batch's loss so that the gradients accumulate in w.grad.",
            )
        )
    for k in range(1, n):
        if k in first_forward and first_forward[k] < first_backward[k - 1]:
            raise _Fail(
                _message(
                    "accumulate",
                    f"kept several batch graphs alive at once for {p.desc}",
                    [f"the loss of batch {k} was computed before the loss of batch {k - 1} was backpropagated"],
                    "call .backward() inside the loop, once per batch, so only one batch's graph exists at a time "
                    "(that is the point of gradient accumulation); do not sum all losses first.",
                )
            )


def _judge_returns_own_copy(p: _BatchProbe, result: Any, aliases: bool, after_zeroing: torch.Tensor | None) -> None:
    value = _result_value(result)
    if value is None or after_zeroing is None:  # _judge_accumulate accepted a tensor, so both were recorded
        raise _Malformed("'value_after_zeroing_w_grad' is missing for a tensor result")
    if aliases or not _same(after_zeroing, value):
        raise _Fail(
            _message(
                "accumulate",
                f"returned w.grad itself (or a view of it) for {p.desc}",
                ["after the call, w.grad.zero_() also wiped your returned tensor"],
                "w.grad is reused and zeroed by the next step; return a copy: `return w.grad.clone()` "
                "(or compute a new tensor, e.g. `w.grad / len(batches)`).",
            )
        )


def _judge_accumulate_probe(check: str, p: _BatchProbe, stale: torch.Tensor | None, obs: Obs) -> None:
    _fail_if_raised("accumulate", obs, p.desc)
    if not _same(_tensor_field(obs, "w_after"), p.w) or not _bool_field(obs, "w_requires_grad"):
        raise _Fail(
            _message("accumulate", f"changed w itself for {p.desc}", ["w holds different values after the call"],
                     "only compute the gradient: no optimizer step, no in-place change of w.")
        )
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


def _observe_second(fn: Callable[..., Any], p: _ElementwiseProbe, stale: torch.Tensor | None) -> Obs:
    """Call the student's second_derivative; record the result, x and x.grad before/after."""
    x = _leaf(p.x)
    if stale is not None:
        x.grad = stale.clone()
    obs: Obs = {"x_grad_before": _grad_record(x)}
    error, result = _invoke(fn, (p.f, x))
    if error is not None:
        obs["error"] = error
    else:
        obs["result"] = _result_record(result)
    obs["x_after"] = _plain(x)
    obs["x_grad_after"] = _grad_record(x)
    return obs


def _judge_second(p: _ElementwiseProbe, result: Any) -> None:
    first, expected = _elementwise_derivatives(p)
    got = _as_result(
        "secondderiv", result, p.x.shape, p.desc,
        wrong_shape_hint=("return one second derivative per entry of x (same shape as x): use grad_outputs="
                          "torch.ones_like(...) rather than summing the result."),
    )
    if _close(got, expected):
        return
    if _close(got, first):
        hint = ("your answer is the FIRST derivative f'(x): differentiate it once more (the first grad call "
                "needs create_graph=True so that its result can be differentiated).")
    elif _close(got, 2 * expected) or _close(got, expected / 2):
        hint = "your answer is off by a factor of 2: check the grad_outputs you pass (they should be ones)."
    else:
        hint = ("take g = d f / dx with create_graph=True and grad_outputs=ones, then differentiate g again "
                "with grad_outputs=ones.")
    raise _Fail(_message("secondderiv", f"is wrong for {p.desc}", [_first_mismatch(got, expected)], hint))


def _judge_second_probe(check: str, p: _ElementwiseProbe, stale: torch.Tensor | None, obs: Obs) -> None:
    _fail_if_raised("secondderiv", obs, p.desc)
    if not _same(_tensor_field(obs, "x_after"), p.x):
        raise _Fail(
            _message("secondderiv", f"changed x itself for {p.desc}", ["x holds different values after the call"],
                     "only compute derivatives; never modify x in place.")
        )
    _expect_grad_before(obs, "x_grad_before", stale)
    grad_after = _grad_field(obs, "x_grad_after", p.x.shape)
    if check == "check_second_derivative_general":
        changed = _grad_changed(stale, grad_after)
        if changed:
            raise _Fail(
                _message(
                    "secondderiv",
                    f"changed x.grad for {p.desc}",
                    [changed],
                    ".backward() writes into x.grad (and with create_graph=True it also warns about a reference "
                    "cycle). Use torch.autograd.grad for both derivatives: it returns them and leaves x.grad alone.",
                )
            )
    _judge_second(p, _field(obs, "result"))


def _second_setup(args: dict[str, Any]) -> list[tuple[_ElementwiseProbe, torch.Tensor | None]]:
    return [(p, None) for p in _second_probes(args["sizes"], args["seed"])]


def _general_setup(args: dict[str, Any]) -> list[tuple[_ElementwiseProbe, torch.Tensor | None]]:
    probes = _general_probes(args["sizes"], args["seed"] + 1000)
    gen = torch.Generator().manual_seed(args["seed"] + 2000)
    return [(p, None if i % 2 == 0 else _rand(gen, *p.x.shape, low=5.0, high=9.0)) for i, p in enumerate(probes)]


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


_DEFAULTS = {"sizes": (3,), "seed": 0}
_BATCH_DEFAULTS = {"sizes": (3,), "n_batches": 4, "seed": 0}

#: Every public check, by name: the exercise, its keyword arguments with defaults, how it observes and judges.
CHECKS: dict[str, _Check] = {
    "check_vjp": _Check("vjp", _DEFAULTS, _vjp_setup, _observe_vjp, _judge_vjp_probe,
                        "vjp: matches vᵀJ on {n} probes"),
    "check_vjp_keeps_grad": _Check("vjp", _DEFAULTS, _vjp_keeps_grad_setup, _observe_vjp, _judge_vjp_probe,
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
    "check_second_derivative": _Check("secondderiv", _DEFAULTS, _second_setup, _observe_second, _judge_second_probe,
                                      "secondderiv: matches f''(x) on {n} probes"),
    "check_second_derivative_general": _Check("secondderiv", _DEFAULTS, _general_setup, _observe_second,
                                              _judge_second_probe,
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


def observe(check: str, fn: Callable[..., Any], **kwargs: Any) -> list[Obs]:
    """Student side: run ``fn`` on the probes of ``check`` and return plain-data observations, one per probe.

    ``kwargs`` are the public check's (``sizes``, ``seed``, ``n_batches``), with the same defaults. Errors
    raised by ``fn`` are recorded, not raised; warnings are swallowed. Nothing here decides pass or fail.
    """
    spec = _spec(check)
    setups = spec.setup(_arguments(check, spec, kwargs))
    observations: list[Obs] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, (probe, stale) in enumerate(setups):
            try:
                obs = spec.observe_one(fn, probe, stale)
            except Exception as exc:  # e.g. a tensor the student's code made unreadable: judged as malformed
                obs = {"observer_error": f"{_type_name(exc)}: {_first_line(_text(exc))}"}
            observations.append({"check": check, "probe": i, **obs})
    return observations


def _judge_all(check: str, spec: _Check, args: dict[str, Any], observations: Any) -> str:
    ex = spec.exercise
    setups = spec.setup(args)
    if not isinstance(observations, (list, tuple)):
        raise _Fail(_malformed(ex, f"the probes of {check}",
                               f"expected a list of observations, received a {_type_name(observations)}"))
    if len(observations) != len(setups):
        raise _Fail(_malformed(ex, f"the probes of {check}",
                               f"expected {len(setups)} observations (one per probe), received {len(observations)}"))
    for i, ((probe, stale), obs) in enumerate(zip(setups, observations)):
        try:
            if not isinstance(obs, dict):
                raise _Malformed(f"observation {i} is a {_type_name(obs)}, not a dict")
            if obs.get("check") != check or type(obs.get("probe")) is not int or obs.get("probe") != i:
                raise _Malformed(f"observation {i} is not the observation of probe {i} of {check}")
            spec.judge_one(check, probe, stale, obs)
        except _Fail:
            raise
        except _Malformed as bad:
            raise _Fail(_malformed(ex, probe.desc, str(bad))) from None
        except Exception as exc:  # data nothing above anticipated (or a bug of ours): never a pass
            raise _Fail(_malformed(ex, probe.desc, f"{_type_name(exc)}: {_first_line(_text(exc))}")) from None
    return spec.summary.format(n=len(setups))


def judge(check: str, observations: list[Obs], **kwargs: Any) -> str:
    """Trusted side: judge ``observations`` of ``check`` against references rebuilt here from ``kwargs``.

    Returns the one-line summary printed after ``✓ `` on success; raises ``AssertionError`` with the
    student-facing message otherwise. Never runs student code and never trusts the observations:
    anything malformed fails the check.
    """
    spec = _spec(check)
    args = _arguments(check, spec, kwargs)
    message = ""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            summary = _judge_all(check, spec, args, observations)
        except _Fail as failure:
            message = str(failure)
        except Exception as exc:  # a bug of ours: a precise message, never a pass
            message = _malformed(spec.exercise, f"the probes of {check}", f"{_type_name(exc)}: {_text(exc)}")
    if message:
        raise AssertionError(message)  # raised outside the handlers: no chained context in the traceback
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
