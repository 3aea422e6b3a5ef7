"""Checks for the graded exercises of notebook 1, "Autograd basics".

One public ``check_*`` function per graded test cell. Each one

- calls the student's function on small float64 probe inputs built from ``seed``,
- compares with a reference computed by PyTorch itself (``torch.autograd.functional``),
- on failure raises ``AssertionError`` with a short message a student can act on
  (what was called, the first wrong element, a hint naming the likely mistake and the
  notebook section to re-read), never a traceback of grader internals,
- on success prints a single line starting with ``✓``.

Nothing here imports nbgrader or Jupyter, prints to stderr or lets a warning escape:
warnings raised inside the student's code are recorded and dropped, because nbgrader
scores a cell that writes to stderr as failed.
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


def _call(ex: str, fn: Callable[..., Any], args: tuple[Any, ...], context: str) -> Any:
    """Call the student's function; turn any exception into a student-facing ``_Fail``."""
    try:
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            return fn(*args)
    except NotImplementedError as exc:
        said = f" ({_first_line(str(exc))})" if str(exc).strip() else ""
        raise _Fail(
            f"{ex}: your {SIGNATURES[ex]} raised NotImplementedError{said}\n"
            f"  It is still the stub: replace the `raise NotImplementedError` line with your code.\n"
            f"  Hint: {_GENERIC_HINT[ex]} {_see(ex)}"
        ) from None
    except Exception as exc:  # the student's bug, reported in words
        error = f"{type(exc).__name__}: {_first_line(str(exc))}"
        hint = next((h for key, h in _ERROR_HINTS[ex] if key in str(exc)), _GENERIC_HINT[ex])
        details = [error]
        where = _student_line(exc)
        if where:
            details.append(f"in your code, {where}")
        raise _Fail(_message(ex, f"raised an error for {context}", details, hint)) from None


def _as_result(ex: str, result: Any, shape: torch.Size, context: str, wrong_shape_hint: str | None = None) -> torch.Tensor:
    """Check that ``result`` is a tensor of ``shape``; return it detached as float64."""
    if result is None:
        raise _Fail(
            _message(ex, f"returned None for {context}", [f"expected a tensor of shape {_fmt_shape(shape)}"],
                     "did you forget the `return` statement?")
        )
    if isinstance(result, (tuple, list)):
        inner = ", ".join(type(r).__name__ for r in result)
        raise _Fail(
            _message(
                ex,
                f"returned a {type(result).__name__} ({inner}) for {context}",
                [f"expected a single tensor of shape {_fmt_shape(shape)}"],
                "torch.autograd.grad returns a tuple with one gradient per input: take its [0], "
                "e.g. `(g,) = torch.autograd.grad(...)`.",
            )
        )
    if not isinstance(result, torch.Tensor):
        raise _Fail(
            _message(ex, f"returned a {type(result).__name__} for {context}",
                     [f"expected a torch.Tensor of shape {_fmt_shape(shape)}"], _GENERIC_HINT[ex])
        )
    if result.shape != shape:
        raise _Fail(
            _message(
                ex,
                f"returned the wrong shape for {context}",
                [f"expected shape {_fmt_shape(shape)}, received {_fmt_shape(result.shape)}"],
                wrong_shape_hint or _GENERIC_HINT[ex],
            )
        )
    if not (result.is_floating_point() or result.is_complex()):
        raise _Fail(
            _message(ex, f"returned an integer tensor ({result.dtype}) for {context}",
                     ["expected a float64 tensor"], "return the gradient tensor itself, do not round it.")
        )
    return result.detach().to(DTYPE)


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


def _grad_state(t: torch.Tensor) -> torch.Tensor | None:
    return None if t.grad is None else t.grad.detach().clone()


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


def _run_vjp(fn: Callable[..., Any], p: _VjpProbe, stale_grad: torch.Tensor | None) -> tuple[torch.Tensor, str | None]:
    """Call the student's vjp on a fresh copy of the probe; return (result, how x.grad changed)."""
    x = _leaf(p.x)
    if stale_grad is not None:
        x.grad = stale_grad.clone()
    x_before = x.detach().clone()
    grad_before = _grad_state(x)
    result = _call("vjp", fn, (p.f, x, p.v.clone()), p.desc)
    if not torch.equal(x.detach(), x_before):
        raise _Fail(
            _message("vjp", f"changed x itself for {p.desc}", ["x holds different values after the call"],
                     "only compute the product; never modify x in place.")
        )
    return result, _grad_changed(grad_before, x.grad)


def _judge_vjp(p: _VjpProbe, result: Any) -> None:
    expected, jac = _vjp_reference(p)
    out_shape = p.v.shape
    if isinstance(result, torch.Tensor) and result.shape == jac.shape and result.shape != p.x.shape:
        raise _Fail(
            _message(
                "vjp",
                f"returned the whole Jacobian for {p.desc}",
                [f"expected vᵀJ of shape {_fmt_shape(p.x.shape)}, received shape {_fmt_shape(result.shape)} "
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


@_student_facing
def check_vjp(fn: Callable[..., Any], sizes: Sequence[int] = (3,), seed: int = 0) -> None:
    """Check ``fn(f, x, v)`` returns vᵀJ (J = Jacobian of f at x) on three probe functions per size.

    Probes: an elementwise f, a matrix map to a longer vector and a 2-D input.
    """
    probes = _vjp_probes(sizes, seed)
    for p in probes:
        result, _ = _run_vjp(fn, p, stale_grad=None)
        _judge_vjp(p, result)
    print(f"✓ vjp: matches vᵀJ on {len(probes)} probes")


@_student_facing
def check_vjp_keeps_grad(fn: Callable[..., Any], sizes: Sequence[int] = (3,), seed: int = 0) -> None:
    """Check ``fn(f, x, v)`` leaves ``x.grad`` untouched (None, or the caller's stale values) and is correct."""
    probes = _vjp_probes(sizes, seed + 1000)
    gen = torch.Generator().manual_seed(seed + 2000)
    for i, p in enumerate(probes):
        stale = None if i % 2 == 0 else _rand(gen, *p.x.shape, low=5.0, high=9.0)
        result, changed = _run_vjp(fn, p, stale_grad=stale)
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
        _judge_vjp(p, result)
    print(f"✓ vjp: x.grad left untouched and vᵀJ correct on {len(probes)} probes")


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


@dataclass
class _Run:
    result: Any
    w: torch.Tensor
    events: list[tuple[str, int]]


def _run_accumulate(fn: Callable[..., Any], p: _BatchProbe, stale_grad: torch.Tensor | None) -> _Run:
    """Call the student's function with a loss_fn that records forward/backward order per batch."""
    w = _leaf(p.w)
    if stale_grad is not None:
        w.grad = stale_grad.clone()
    w_before = w.detach().clone()
    index_of = {id(b): k for k, b in enumerate(p.batches)}
    events: list[tuple[str, int]] = []

    def tracked_loss(w_arg: torch.Tensor, batch: Any) -> torch.Tensor:
        k = index_of.get(id(batch), -1)
        loss = p.loss_fn(w_arg, batch)
        events.append(("forward", k))
        if loss.requires_grad:
            loss.register_hook(lambda grad, k=k: events.append(("backward", k)))
        return loss

    result = _call("accumulate", fn, (tracked_loss, w, list(p.batches)), p.desc)
    if not torch.equal(w.detach(), w_before) or not w.requires_grad:
        raise _Fail(
            _message("accumulate", f"changed w itself for {p.desc}", ["w holds different values after the call"],
                     "only compute the gradient: no optimizer step, no in-place change of w.")
        )
    return _Run(result, w, events)


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


@_student_facing
def check_mean_gradient(fn: Callable[..., Any], sizes: Sequence[int] = (3,), n_batches: int = 4, seed: int = 0) -> None:
    """Check ``fn(loss_fn, w, batches)`` returns the mean-loss gradient with one backward per batch (w.grad None on entry)."""
    probes = _batch_probes(sizes, n_batches, seed)
    for p in probes:
        run = _run_accumulate(fn, p, stale_grad=None)
        _judge_accumulate(p, run.result, stale=None)
        _judge_one_backward_per_batch(p, run.events)
    print(f"✓ accumulate: mean gradient correct, one backward per batch, on {len(probes)} probes")


@_student_facing
def check_mean_gradient_stale(fn: Callable[..., Any], sizes: Sequence[int] = (3,), n_batches: int = 4, seed: int = 0) -> None:
    """Check ``fn(loss_fn, w, batches)`` is correct when ``w.grad`` holds stale values on entry."""
    probes = _batch_probes(sizes, n_batches, seed + 1000)
    gen = torch.Generator().manual_seed(seed + 2000)
    for p in probes:
        stale = _rand(gen, *p.w.shape, low=3.0, high=6.0)
        run = _run_accumulate(fn, p, stale_grad=stale)
        _judge_accumulate(p, run.result, stale=stale)
    print(f"✓ accumulate: stale w.grad ignored on {len(probes)} probes")


@_student_facing
def check_mean_gradient_copy(fn: Callable[..., Any], sizes: Sequence[int] = (3,), n_batches: int = 4, seed: int = 0) -> None:
    """Check the tensor ``fn`` returns is its own copy: zeroing ``w.grad`` afterwards must not change it."""
    probes = _batch_probes(sizes, n_batches, seed + 3000)
    for p in probes:
        run = _run_accumulate(fn, p, stale_grad=None)
        _judge_accumulate(p, run.result, stale=None)
        result: torch.Tensor = run.result
        kept = result.detach().clone()
        grad = run.w.grad
        if grad is not None:
            grad.zero_()  # what the next training step does with w.grad
        if result is grad or not torch.equal(result.detach(), kept):
            raise _Fail(
                _message(
                    "accumulate",
                    f"returned w.grad itself (or a view of it) for {p.desc}",
                    ["after the call, w.grad.zero_() also wiped your returned tensor"],
                    "w.grad is reused and zeroed by the next step; return a copy: `return w.grad.clone()` "
                    "(or compute a new tensor, e.g. `w.grad / len(batches)`).",
                )
            )
    print(f"✓ accumulate: returns its own copy, not w.grad, on {len(probes)} probes")


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


def _run_second(fn: Callable[..., Any], p: _ElementwiseProbe, stale_grad: torch.Tensor | None) -> tuple[Any, str | None]:
    x = _leaf(p.x)
    if stale_grad is not None:
        x.grad = stale_grad.clone()
    x_before = x.detach().clone()
    grad_before = _grad_state(x)
    result = _call("secondderiv", fn, (p.f, x), p.desc)
    if not torch.equal(x.detach(), x_before):
        raise _Fail(
            _message("secondderiv", f"changed x itself for {p.desc}", ["x holds different values after the call"],
                     "only compute derivatives; never modify x in place.")
        )
    return result, _grad_changed(grad_before, x.grad)


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


@_student_facing
def check_second_derivative(fn: Callable[..., Any], sizes: Sequence[int] = (3,), seed: int = 0) -> None:
    """Check ``fn(f, x)`` returns the elementwise f''(x) for three elementwise functions on 1-D x."""
    probes = _second_probes(sizes, seed)
    for p in probes:
        result, _ = _run_second(fn, p, stale_grad=None)
        _judge_second(p, result)
    print(f"✓ secondderiv: matches f''(x) on {len(probes)} probes")


@_student_facing
def check_second_derivative_general(fn: Callable[..., Any], sizes: Sequence[int] = (3,), seed: int = 0) -> None:
    """Check ``fn(f, x)`` works for 0-d and multi-dimensional x and leaves ``x.grad`` as it was."""
    probes = _general_probes(sizes, seed + 1000)
    gen = torch.Generator().manual_seed(seed + 2000)
    for i, p in enumerate(probes):
        stale = None if i % 2 == 0 else _rand(gen, *p.x.shape, low=5.0, high=9.0)
        result, changed = _run_second(fn, p, stale_grad=stale)
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
        _judge_second(p, result)
    print(f"✓ secondderiv: any shape (0-d to 3-d) and x.grad untouched, on {len(probes)} probes")
