"""Checks for notebook 4's function exercises: Hessian-vector products and a gradient penalty.

They follow ``grader.basics`` exactly (and register there, so test cells call ``basics.check_hvp(...)``):
``observe`` calls the student's function on probes and records plain data, ``judge`` rebuilds the
probes, computes PyTorch's answers (the gradient and Hessian by ``torch.autograd.grad``) and names the mistake.

Some probe functions are built from the student's own custom Functions (``Softplus`` from notebook 4,
and ``Square``, ``Exp``, ``Sinh`` when the notebook carries them over from notebook 3): an HVP or a
gradient penalty goes through their double backward. The judge's reference uses PyTorch's ops instead.

One mistake costs points in one place. A probe built from the student's own Functions counts only when those
Functions are fit for it: the observer also computes the answer the way a correct solution does (double backward;
for ``hvp_forward`` torch.func's jvp of grad; the penalty and its gradient with respect to w) through the student's
Functions, and the judge compares that with PyTorch's. When it raises (a stub, no jvp, the classic style under
torch.func, a backward that is not differentiable) or differs, the Function's own checks already count the mistake:
the probe is not charged to hvp / gradient_penalty (unless their answer is right anyway), and the check's ✓ line says
which probes were not counted and names the Function's answer cell (``own_function_excused``). When the Functions
are fit, anything wrong on the probe is the answer's own (e.g. an hvp written with torch.func, which cannot go
through notebook 3's classic-style Square: ``hvp_torch_func_through_classic_function``). A forged "unfit" record can
only excuse a probe through the student's own Functions; the probes on plain PyTorch functions always count.

The grader's probe functions also record, each time they are called, how: under which ``torch.func``
transforms (grad, jvp, vmap) and with a forward-mode tangent or not. That tells double backward,
forward-over-reverse and "the whole Hessian, then a product" apart.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch
import torch.nn.functional as F

from grader import basics
from grader.spec.exercises import _softplus, reference_hessian
from grader.basics import (_Check, _Fail, _Malformed, _as_result, _bool_field, _close, _difference, _fail_if_modified,
                     _fail_if_raised, _field, _first_line, _grad_field, _invoke, _leaf, _opaque, _plain, _rand,
                     _result_record, _result_value, _str_field, _tensor_field, _type_name)

Obs = dict[str, Any]
MAX_CALLS = 50  # calls of a probe function recorded (an HVP calls f once or twice)

# Names of the student's Functions a probe may be built from, with the PyTorch op the reference uses.
OWN_FUNCTIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "Softplus": _softplus,
    "Square": torch.square,
    "Exp": torch.exp,
    "Cube": lambda t: t**3,
    "Sinh": torch.sinh,
}


def _student_ops(namespace: dict[str, Any] | None, names: Sequence[str]) -> dict[str, Callable[..., Any]] | list[str]:
    """``name -> Name.apply`` from the notebook, or the list of names it does not define as custom Functions."""
    found, missing = {}, []
    for name in names:
        cls = (namespace or {}).get(name)
        try:
            is_function = isinstance(cls, type) and issubclass(cls, torch.autograd.Function)
        except Exception:  # a class whose metaclass makes issubclass fail is not a Function of the course's
            is_function = False
        if is_function:
            found[name] = _first_output(cls.apply)
        else:
            missing.append(name)
    return missing or found


def _first_output(apply: Callable[..., Any]) -> Callable[..., Any]:
    """``Name.apply``, keeping only the first output (notebook 3's Sinh returns its intermediates too)."""
    def op(*args: Any) -> Any:
        out = apply(*args)
        return out[0] if isinstance(out, tuple) else out

    return op



# What a probe function records with, taken when this module is imported (and put back before each observation):
# C functions and C methods, held in the probe function's closure, so that nothing a notebook rebinds during a call
# of f (torch._functorch, forward_ad, torch._C._functorch's classes, builtins) changes what is recorded.
_TRANSFORM = torch._C._functorch.TransformType
_TRANSFORM_NAMES = {int(getattr(_TRANSFORM, name)): name for name in ("Grad", "Jvp", "Vmap", "Functionalize")}
_RECORDING = (torch._C._functorch.get_interpreter_stack, torch._C._functorch.CInterpreter.key, _TRANSFORM.__int__,
              tuple(_TRANSFORM_NAMES.get(k, "Other") for k in range(max(_TRANSFORM_NAMES) + 1)),  # immutable
              torch._C._VariableFunctions._unpack_dual, vars(torch.autograd.forward_ad), torch.Tensor, isinstance,
              len, bool, list.append, Exception, MAX_CALLS)


def _recording(f: Callable[..., torch.Tensor], calls: list[Obs]) -> Callable[..., torch.Tensor]:
    """f, recording in ``calls`` how each call came: under which torch.func transforms (grad, jvp, vmap), with a
    forward-mode tangent (a dual tensor) or not, on an input autograd tracks or not."""
    (stack, key, as_int, names, unpack_dual, forward_ad, tensor, is_instance, length, as_bool, append, error,
     limit) = _RECORDING

    def probe_function(*args: Any) -> torch.Tensor:
        if length(calls) < limit:
            x = None
            for arg in args:
                if is_instance(arg, tensor):
                    x = arg
                    break
            try:
                transforms = [names[as_int(key(interpreter))] for interpreter in stack() or ()]
            except error:
                transforms = []
            dual = False
            level = forward_ad.get("_current_level", -1)
            if x is not None and is_instance(level, int) and level >= 0:
                try:
                    dual = unpack_dual(x, level=level)[1] is not None
                except error:
                    dual = False
            append(calls, {"transforms": transforms, "dual": dual,
                           "tracked": x is not None and as_bool(x.requires_grad)})
        return f(*args)

    return _opaque(probe_function)


# ---------------------------------------------------------------------------------------------
# exercise "hvp": hvp(f, x, v) by double backward, hvp_forward(f, x, v) by forward-over-reverse


@dataclass(frozen=True)
class _HvpProbe:
    desc: str
    make: Callable[[dict[str, Callable[..., Any]]], Callable[[torch.Tensor], torch.Tensor]]  # ops -> f
    x: torch.Tensor
    v: torch.Tensor
    uses: tuple[str, ...] = ()  # the student's Functions f is built from
    optional: bool = False  # judged only when the notebook defines every Function in ``uses``
    forward_mode: bool = False  # the probe of check_hvp_forward_over_reverse (the grader's own route: jvp of grad)
    reference_ops: dict[str, Callable[..., Any]] = field(default_factory=dict)

    def reference(self) -> Callable[[torch.Tensor], torch.Tensor]:
        return self.make({name: OWN_FUNCTIONS[name] for name in self.uses})


def _hvp_probes(sizes: Sequence[int], seed: int, forward_mode: bool = False) -> list[_HvpProbe]:
    gen = torch.Generator().manual_seed(seed)
    probes: list[_HvpProbe] = []
    for n in sizes:
        n = max(int(n), 2)
        probes.append(_HvpProbe(f"f(x) = sum(sin(x) * x²), x of shape ({n},)",
                                lambda ops: lambda t: (torch.sin(t) * t**2).sum(), _rand(gen, n), _rand(gen, n)))
        probes.append(_HvpProbe(f"f(x) = Rosenbrock's function, x of shape ({n},)",
                                lambda ops: lambda t: (100 * (t[1:] - t[:-1] ** 2) ** 2 + (1 - t[:-1]) ** 2).sum(),
                                _rand(gen, n, low=-1.5, high=1.5), _rand(gen, n)))
        a = _rand(gen, n + 1, n)
        probes.append(_HvpProbe(f"f(x) = logsumexp(A @ x), A of shape ({n + 1}, {n})",
                                lambda ops, a=a: lambda t: torch.logsumexp(a @ t, dim=0), _rand(gen, n), _rand(gen, n)))
        b, c = _rand(gen, n + 2, n), _rand(gen, n + 2)
        probes.append(_HvpProbe(f"f(x) = sum(c * Softplus(B @ x)) with your Softplus, B of shape ({n + 2}, {n})",
                                lambda ops, b=b, c=c: lambda t: (c * ops["Softplus"](b @ t)).sum(),
                                _rand(gen, n), _rand(gen, n), uses=("Softplus",), forward_mode=forward_mode))
        if forward_mode:
            continue  # notebook 3's Functions are written with ctx in forward and have no jvp: not for torch.func
        # One each, so that a wrong one is named. Not Cube: its CubeBackward is differentiable once by design
        # (NumPy inside), and torch.autograd.functional.hvp, a correct answer, differentiates three times.
        for name in ("Square", "Exp", "Sinh"):
            d = _rand(gen, n)
            probes.append(_HvpProbe(f"f(x) = sum(d * {name}(x)) with your {name} from notebook 3, x of shape ({n},)",
                                    lambda ops, d=d, name=name: lambda t: (d * ops[name](t)).sum(),
                                    _rand(gen, n, low=-1.0, high=1.0), _rand(gen, n), uses=(name,), optional=True))
    return probes


def _hvp_setup(args: dict[str, Any]) -> list[tuple[_HvpProbe, None]]:
    return [(p, None) for p in _hvp_probes(args["sizes"], args["seed"])]


def _hvp_forward_setup(args: dict[str, Any]) -> list[tuple[_HvpProbe, None]]:
    return [(p, None) for p in _hvp_probes(args["sizes"], args["seed"], forward_mode=True)]


def _observe_hvp(fn: Callable[..., Any], p: _HvpProbe, stale: None, namespace: dict[str, Any] | None = None) -> Obs:
    ops = _student_ops(namespace, p.uses)
    if isinstance(ops, list):
        return {"missing": ops}
    calls: list[Obs] = []
    x = p.x.clone()  # given without requires_grad, as a caller would
    error, result = _invoke(fn, (_recording(p.make(ops), calls), x, p.v.clone()))
    obs: Obs = {"calls": calls, "x_after": _plain(x), "x_requires_grad": bool(x.requires_grad),
                "x_grad_after": None if x.grad is None else _plain(x.grad)}
    if error is not None:
        obs["error"] = error
    else:
        obs["result"] = _result_record(result)
    if p.uses:
        obs["own"] = _own_record(lambda: _grader_hvp(p.make(ops), p.x.clone(), p.v.clone(), p.forward_mode))
    return obs


def _grader_hvp(f: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, v: torch.Tensor,
                forward_mode: bool) -> torch.Tensor:
    """H v the way a correct answer computes it (the solutions' way), here through the student's own Functions:
    whether it comes out right says whether those Functions are fit for this probe."""
    if forward_mode:
        return torch.func.jvp(torch.func.grad(f), (x,), (v,))[1]
    x = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(f(x), x, create_graph=True)
    (hv,) = torch.autograd.grad(g, x, v)
    return hv


def _own_record(compute: Callable[[], Any]) -> Obs:
    """What the grader's own computation through the student's Functions gave: a value or the error it raised."""
    error, value = _invoke(compute, ())
    if error is not None:
        return {"error": error}
    return {"value": _result_record(value)}


def _own_unfit(p: Any, obs: Obs, expected: Callable[[], Any]) -> str | None:
    """Why the student's own Functions a probe goes through are not fit for it (the grader's own computation
    through them raised, or differs from PyTorch's), or None when they are. ``expected``: PyTorch's value(s)."""
    own = _field(obs, "own")
    if not isinstance(own, dict) or len(own) != 1 or not ({"error"} >= set(own) or {"value"} >= set(own)):
        raise _Malformed("'own' is not one error or one value")
    if "error" in own:
        error = _field(own, "error")
        text = _first_line(_str_field(error, "message") or "")
        if _bool_field(error, "not_implemented"):
            return f"it still raises NotImplementedError ({text})" if text else "it still raises NotImplementedError"
        return f"{_first_line(_str_field(error, 'type') or '', 100) or 'Exception'}: {text}"
    record = _field(own, "value")
    values = expected()
    value = _result_value(record)
    if value is None or value.shape != values.shape or not _close(value.to(torch.float64), values):
        return "PyTorch's own recipe through it gives a wrong result"
    return None


def _excused(p: Any, why: str) -> str:
    """The note a check adds to its summary for a probe it did not count (``grader.spec.messages``' own_function_excused)."""
    from grader.spec import messages

    note = messages.message("own_function_excused")
    fields = {"names": ", ".join(p.uses), "why": why, "cells": ", ".join(f"`{n.lower()}`" for n in p.uses)}
    return f"{note.title.format(**fields)}. {note.hint.format(**fields)}"


def _calls(obs: Obs) -> list[Obs]:
    calls = _field(obs, "calls")
    if not isinstance(calls, list) or len(calls) > MAX_CALLS:
        raise _Malformed("'calls' is not a list of at most {MAX_CALLS} records")
    for call in calls:
        transforms = _field(call, "transforms")
        if not isinstance(transforms, list) or not all(type(t) is str for t in transforms):
            raise _Malformed("'transforms' is not a list of names")
        _bool_field(call, "dual")
        _bool_field(call, "tracked")
    return calls


def _fail_if_x_untracked(obs: Obs, calls: list[Obs]) -> None:
    """f only ever ran on an x that autograd does not track (no requires_grad, no transform, no tangent): then
    "does not require grad" means x was not made a tracked copy, not a missing create_graph."""
    if "error" not in obs or not calls or any(c["tracked"] or c["dual"] or c["transforms"] for c in calls):
        return
    error = _field(obs, "error")
    text = _str_field(error, "message") or ""
    if "does not require grad" in text:
        raise _Fail("hvp_x_not_tracked", error_type=_first_line(_str_field(error, "type") or "", 100) or "Exception",
                    error=_first_line(text), code=_first_line(_str_field(error, "code", optional=True) or ""))


_HVP_REFERENCES: dict[tuple[Any, ...], tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}
_HVP_REFERENCES_LOCK = threading.Lock()


def _hvp_reference(p: _HvpProbe) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(H v, ∇f, H) at p.x, from PyTorch's own ops. The same for every student (the probe's function, its
    constants, x and v make the key): computed once per probe in this process, since
    the Hessian costs more than judging the rest of the notebook."""
    constants = [t.numpy().tobytes() for t in p.make.__defaults__ or () if isinstance(t, torch.Tensor)]
    key = (p.desc, p.x.numpy().tobytes(), p.v.numpy().tobytes(), *constants)
    with _HVP_REFERENCES_LOCK:
        known = _HVP_REFERENCES.get(key)
    if known is None:
        grad, hess = reference_hessian(p.reference(), p.x)
        known = (hess @ p.v, grad, hess)
        with _HVP_REFERENCES_LOCK:
            if len(_HVP_REFERENCES) > 256:  # probes are few (sizes x functions); a bound all the same
                _HVP_REFERENCES.clear()
            _HVP_REFERENCES[key] = known
    return tuple(t.clone() for t in known)  # type: ignore[return-value]


def _judge_hvp_probe(check: str, p: _HvpProbe, stale: None, obs: Obs) -> None:
    if not isinstance(obs, dict):
        raise _Malformed(f"an observation is a {_type_name(obs)}, not a dict")
    if "missing" in obs:
        missing = obs["missing"]
        if not isinstance(missing, list) or not all(type(m) is str and m in p.uses for m in missing) or not missing:
            raise _Malformed("'missing' does not name Functions this probe uses")
        if p.optional:
            return  # not carried over from notebook 3: nothing to judge through them
        raise _Fail("hvp_needs_function", names=", ".join(missing), probe_function=p.desc)
    calls = _calls(obs)
    if p.uses:
        # One mistake costs points in one place: a probe through the student's own Functions counts only when they
        # are fit for it (PyTorch's own recipe through them gives PyTorch's H v); otherwise their own checks
        # already count the mistake, and this check names them and judges hvp on the other probes.
        why = _own_unfit(p, obs, lambda: _hvp_reference(p)[0])
        if why is not None and not _result_is(obs, lambda: _hvp_reference(p)[0]):
            return _excused(p, why)
    _fail_if_x_untracked(obs, calls)
    try:
        _fail_if_raised("hvp", obs)
    except _Fail as failure:
        if failure.mistake == "hvp_torch_func_through_classic_function":
            failure.fields["names"] = ", ".join(p.uses) or "one of your Functions"
        raise
    _fail_if_modified("x", p.x, _tensor_field(obs, "x_after"), requires_grad=True)
    if _bool_field(obs, "x_requires_grad") or _grad_field(obs, "x_grad_after", p.x.shape) is not None:
        raise _Fail("hvp_changed_x", where="x.requires_grad / x.grad", expected="False / None",
                    received="changed by your function")
    expected, gradient, hess = _hvp_reference(p)
    got = _as_result(_field(obs, "result"), p.x.shape, "hvp_wrong_shape")
    if not _close(got, expected):
        diff = _difference("result", expected, got)
        if _close(got, gradient):
            raise _Fail("hvp_returns_gradient", **diff)
        if _close(got, hess @ torch.ones_like(p.v)):
            raise _Fail("hvp_ones_not_v", **diff)
        if _close(got, torch.diagonal(hess) * p.v):
            raise _Fail("hvp_diagonal_only", **diff)
        raise _Fail("hvp_wrong", **diff)
    transforms = {t for call in calls for t in call["transforms"]}
    forward = "Jvp" in transforms or any(call["dual"] for call in calls)
    if "Vmap" in transforms:
        raise _Fail("hvp_forms_hessian")
    if check == "check_hvp" and forward:
        raise _Fail("hvp_not_double_backward")
    if check == "check_hvp_forward_over_reverse" and not forward:
        raise _Fail("hvp_not_forward_mode")
    return None


def _result_is(obs: Obs, expected: Callable[[], torch.Tensor]) -> bool:
    """The student's function returned PyTorch's value (then an unfit Function of theirs excuses nothing)."""
    if "result" not in obs:
        return False
    value = _result_value(_field(obs, "result"))
    if value is None:
        return False
    want = expected()
    return value.shape == want.shape and _close(value.to(torch.float64), want)


# ---------------------------------------------------------------------------------------------
# exercise "penalty": gradient_penalty(f, w, x), WGAN-GP style


@dataclass(frozen=True)
class _PenaltyProbe:
    desc: str
    make: Callable[[dict[str, Callable[..., Any]]], Callable[[torch.Tensor, torch.Tensor], torch.Tensor]]
    w: torch.Tensor
    x: torch.Tensor
    uses: tuple[str, ...] = ()

    def reference(self) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
        return self.make({name: OWN_FUNCTIONS[name] for name in self.uses})


def _penalty_probes(sizes: Sequence[int], seed: int) -> list[_PenaltyProbe]:
    gen = torch.Generator().manual_seed(seed)
    batch, features = int(sizes[0]), int(sizes[1]) if len(sizes) > 1 else 3
    hidden = 3
    return [
        _PenaltyProbe(f"f(w, x) = 2 * tanh(x @ w), x of shape ({batch}, {features})",
                      lambda ops: lambda w, x: 2 * torch.tanh(x @ w),
                      _rand(gen, features), _rand(gen, batch, features)),
        _PenaltyProbe(f"f(w, x) = sum((w * x)², dim=1) + sin(x @ w), x of shape ({batch}, {features})",
                      lambda ops: lambda w, x: ((w * x) ** 2).sum(1) + torch.sin(x @ w),
                      _rand(gen, features, low=-0.8, high=0.8), _rand(gen, batch, features)),
        _PenaltyProbe(f"f(w, x) = Softplus(x @ W1ᵀ) @ w2 with your Softplus (w = W1 ({hidden}, {features}) and w2 "
                      f"({hidden},) flattened into one vector), x of shape ({batch}, {features})",
                      lambda ops: lambda w, x: ops["Softplus"](x @ w[:hidden * features].reshape(hidden, features).T)
                      @ w[hidden * features:],
                      _rand(gen, hidden * features + hidden), _rand(gen, batch, features), uses=("Softplus",)),
        # Image-shaped samples [B, C, H, W]: each sample's gradient has several dimensions, and its norm is taken over
        # all of them (a norm over dimension 1 alone is the same as the flattened one only for 2-D x).
        _PenaltyProbe(f"f(w, x) = 2 * tanh(sum(w * x) over each sample's (2, 2, {features})), x of shape "
                      f"({batch}, 2, 2, {features}) (images: [B, C, H, W])",
                      lambda ops: lambda w, x: 2 * torch.tanh((w * x).flatten(1).sum(1)),
                      _rand(gen, 2, 2, features, low=-0.8, high=0.8), _rand(gen, batch, 2, 2, features)),
    ]


def _penalty_setup(args: dict[str, Any]) -> list[tuple[_PenaltyProbe, None]]:
    return [(p, None) for p in _penalty_probes(args["sizes"], args["seed"])]


def penalty_reference(f: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], w: torch.Tensor,
                      x: torch.Tensor) -> torch.Tensor:
    """mean over the batch of (‖∂f(w, x)_i / ∂x_i‖ − 1)², differentiable with respect to w."""
    x = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(f(w, x).sum(), x, create_graph=True)
    return ((g.flatten(1).norm(dim=1) - 1) ** 2).mean()


def _observe_penalty(fn: Callable[..., Any], p: _PenaltyProbe, stale: None,
                     namespace: dict[str, Any] | None = None) -> Obs:
    ops = _student_ops(namespace, p.uses)
    if isinstance(ops, list):
        return {"missing": ops}
    w, x = _leaf(p.w), p.x.clone()
    error, result = _invoke(fn, (_opaque(p.make(ops)), w, x))
    obs: Obs = {"w_after": _plain(w), "x_after": _plain(x), "w_grad_after": None if w.grad is None else _plain(w.grad),
                "x_requires_grad": bool(x.requires_grad), "x_grad_after": None if x.grad is None else _plain(x.grad)}
    if error is not None:
        obs["error"] = error
        if p.uses:
            obs["own"] = _own_record(lambda: _grader_penalty(p.make(ops), _leaf(p.w), p.x.clone()))
        return obs
    obs["result"] = _result_record(result)
    if p.uses:
        obs["own"] = _own_record(lambda: _grader_penalty(p.make(ops), _leaf(p.w), p.x.clone()))
    if isinstance(result, torch.Tensor):
        with torch._C.DisableTorchFunctionSubclass():  # a subclass's own methods answer nothing below
            result = result.as_subclass(torch.Tensor)
        obs["requires_grad"] = bool(result.requires_grad)
        if result.requires_grad and result.numel() == 1:
            gradient_error, grads = _invoke(lambda: torch.autograd.grad(result.sum(), w, allow_unused=True), ())
            if gradient_error is not None:
                obs["gradient_error"] = gradient_error
            else:
                obs["gradient"] = None if grads[0] is None else _plain(grads[0])
    return obs


def _grader_penalty(f: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], w: torch.Tensor,
                    x: torch.Tensor) -> torch.Tensor:
    """[the penalty, then its gradient with respect to w], flattened into one vector: computed the way a correct
    answer does, here through the student's own Functions (whether it is right says whether they are fit)."""
    value = penalty_reference(f, w, x)
    (gradient,) = torch.autograd.grad(value, w)
    return torch.cat([value.detach().reshape(1), gradient.reshape(-1)])


def _penalty_expected(p: _PenaltyProbe) -> torch.Tensor:
    """PyTorch's [penalty, d penalty / d w] on probe p (what ``_grader_penalty`` gives through fit Functions)."""
    return _grader_penalty(p.reference(), _leaf(p.w), p.x).detach()


def _penalty_variants(p: _PenaltyProbe) -> dict[str, torch.Tensor]:
    """Wrong penalties students compute, by mistake id, to name what the result equals."""
    f, w, x = p.reference(), p.w, p.x.detach().requires_grad_()
    (g,) = torch.autograd.grad(f(w, x).sum(), x)
    per_sample = g.flatten(1)
    variants = {
        "penalty_norm_over_batch": (per_sample.norm() - 1) ** 2,
        "penalty_squared_norm": ((per_sample.pow(2).sum(1) - 1) ** 2).mean(),
        "penalty_sum_not_mean": ((per_sample.norm(dim=1) - 1) ** 2).sum(),
        "penalty_missing_minus_one": (per_sample.norm(dim=1) ** 2).mean(),
    }
    if g.dim() > 2:  # a norm over dimension 1 only: one norm per sample and per remaining position
        variants["penalty_norm_over_dim_1"] = ((g.norm(dim=1) - 1) ** 2).mean()
    return variants


def _judge_penalty_probe(check: str, p: _PenaltyProbe, stale: None, obs: Obs) -> None:
    if not isinstance(obs, dict):
        raise _Malformed(f"an observation is a {_type_name(obs)}, not a dict")
    if "missing" in obs:
        missing = obs["missing"]
        if not isinstance(missing, list) or not missing or not all(type(m) is str and m in p.uses for m in missing):
            raise _Malformed("'missing' does not name Functions this probe uses")
        raise _Fail("hvp_needs_function", names=", ".join(missing), probe_function=p.desc)
    if p.uses:  # the rule of _judge_hvp_probe: a probe through an unfit Function of the student's is not charged
        why = _own_unfit(p, obs, lambda: _penalty_expected(p))
        if why is not None and not _penalty_right(check, p, obs):
            return _excused(p, why)
    _fail_if_raised("penalty", obs)
    _fail_if_modified("w", p.w, _tensor_field(obs, "w_after"))
    _fail_if_modified("x", p.x, _tensor_field(obs, "x_after"))
    # The caller's x comes without requires_grad and without .grad, and must leave as it came (the docstring's
    # rule: a leaf of your own, x.detach().requires_grad_()); each flag is read from what the observer saw.
    if _bool_field(obs, "x_requires_grad") or _grad_field(obs, "x_grad_after", p.x.shape) is not None:
        raise _Fail("penalty_changed_x", where="x.requires_grad / x.grad", expected="False / None",
                    received="changed by your function")
    if _grad_field(obs, "w_grad_after", p.w.shape) is not None:
        raise _Fail("penalty_changed_w_grad", where="w.grad", expected="None", received="a tensor")
    w = _leaf(p.w)
    expected = penalty_reference(p.reference(), w, p.x)
    got = _as_result(_field(obs, "result"), torch.Size([]), "penalty_wrong_shape")
    if not _close(got, expected.detach()):
        diff = _difference("penalty", expected.detach(), got)
        for mistake, value in _penalty_variants(p).items():
            if _close(got, value.detach()):
                raise _Fail(mistake, **diff)
        raise _Fail("penalty_wrong", **diff)
    if check == "check_penalty_value":
        return
    if not _bool_field(obs, "requires_grad"):
        raise _Fail("penalty_no_create_graph", where="penalty.requires_grad", expected="True", received="False")
    if "gradient_error" in obs:
        _fail_if_raised("penalty", {"error": obs["gradient_error"]})
    (expected_gradient,) = torch.autograd.grad(expected, w)
    received = _field(obs, "gradient")
    if received is None:
        raise _Fail("penalty_no_create_graph", where="d penalty / d w", expected="a gradient", received="None")
    received = basics._as_tensor(received, "'gradient'")
    if received.shape != expected_gradient.shape or not _close(received.to(torch.float64), expected_gradient):
        diff = _difference("d penalty / d w", expected_gradient, received)
        raise _Fail("penalty_gradient_wrong", **diff)
    return None


def _penalty_right(check: str, p: _PenaltyProbe, obs: Obs) -> bool:
    """The student's penalty (and, for the gradient check, its gradient) is PyTorch's on probe p."""
    expected = _penalty_expected(p)
    if not _result_is(obs, lambda: expected[0].reshape(())):
        return False
    if check == "check_penalty_value":
        return True
    gradient = obs.get("gradient")
    return (type(gradient) is torch.Tensor and gradient.shape == p.w.shape
            and _close(gradient.detach().to(torch.float64).reshape(-1), expected[1:]))


# ---------------------------------------------------------------------------------------------
# registration with grader.basics: the same observe / judge / public check machinery

SIGNATURES = {"hvp": "hvp(f, x, v)", "check_hvp_forward_over_reverse": "hvp_forward(f, x, v)",
              "penalty": "gradient_penalty(f, w, x)"}
SECTIONS = {"hvp": "7. Exercise: `hvp` (graded, 4 points)",
            "penalty": "11. Exercise: `gradient_penalty` (graded, 3 points)"}
MISTAKE_SECTIONS = {
    "hvp_not_forward_mode": "6. Hessian-vector products: double backward and forward-over-reverse",
    "hvp_forms_hessian": "6. Hessian-vector products: double backward and forward-over-reverse",
    "hvp_no_create_graph": "6. Hessian-vector products: double backward and forward-over-reverse",
    "penalty_no_create_graph": "10. Capstone: a gradient penalty through your own Functions",
}
ERROR_MISTAKES = {
    "hvp": [("One of the differentiated Tensors does not require grad", "hvp_x_not_tracked"),
            ("does not require grad", "hvp_no_create_graph"),
            ("must override the setup_context staticmethod", "hvp_torch_func_through_classic_function")],
    "penalty": [("One of the differentiated Tensors does not require grad", "penalty_x_not_tracked"),
                ("does not require grad", "penalty_no_create_graph")],
}
MISTAKES: dict[str, tuple[str, ...]] = {
    "hvp_needs_function": ("names", "probe_function"),
    "hvp_changed_x": (),
    "hvp_wrong_shape": ("received_shape", "expected_shape"),
    "hvp_returns_gradient": (),
    "hvp_ones_not_v": (),
    "hvp_diagonal_only": (),
    "hvp_wrong": (),
    "hvp_forms_hessian": (),
    "hvp_not_double_backward": (),
    "hvp_not_forward_mode": (),
    "hvp_x_not_tracked": ("error_type", "error"),
    "hvp_torch_func_through_classic_function": ("names", "error_type", "error"),
    "hvp_no_create_graph": ("error_type", "error"),
    "penalty_changed_w_grad": (),
    "penalty_changed_x": (),
    "penalty_norm_over_dim_1": (),
    "penalty_wrong_shape": ("received_shape", "expected_shape"),
    "penalty_norm_over_batch": (),
    "penalty_squared_norm": (),
    "penalty_sum_not_mean": (),
    "penalty_missing_minus_one": (),
    "penalty_wrong": (),
    "penalty_no_create_graph": (),
    "penalty_gradient_wrong": (),
    "penalty_x_not_tracked": ("error_type", "error"),
}
_HVP = {"sizes": (4,), "seed": 0}
_PENALTY = {"sizes": (5, 3), "seed": 0}
CHECKS = {
    "check_hvp": _Check("hvp", _HVP, _hvp_setup, _observe_hvp, _judge_hvp_probe,
                        "hvp: H v by double backward matches PyTorch's Hessian on {n} probes", uses_namespace=True),
    "check_hvp_forward_over_reverse": _Check(
        "hvp", _HVP, _hvp_forward_setup, _observe_hvp, _judge_hvp_probe,
        "hvp_forward: H v by forward-over-reverse matches PyTorch's Hessian on {n} probes", uses_namespace=True),
    "check_penalty_value": _Check("penalty", _PENALTY, _penalty_setup, _observe_penalty, _judge_penalty_probe,
                                  "gradient_penalty: value matches PyTorch's on {n} probes", uses_namespace=True),
    "check_penalty_gradient": _Check(
        "penalty", _PENALTY, _penalty_setup, _observe_penalty, _judge_penalty_probe,
        "gradient_penalty: its gradient with respect to w matches PyTorch's (double backward) on {n} probes",
        uses_namespace=True),
}


def _notebook_namespace() -> dict[str, Any]:
    """The notebook's variables, for a self-check run in the student's kernel (IPython's user namespace)."""
    import sys

    main = sys.modules.get("__main__")
    return dict(vars(main)) if main is not None else {}


def _public(name: str, doc: str) -> Callable[..., None]:
    @basics._student_facing
    def check(fn: Callable[..., Any], sizes: Sequence[int] = CHECKS[name].defaults["sizes"],
              seed: int = 0) -> None:
        kw = {"sizes": sizes, "seed": seed}
        print("✓ " + basics.judge(name, basics.observe(name, fn, namespace=_notebook_namespace(), **kw), **kw))

    check.__name__ = check.__qualname__ = name
    check.__doc__ = doc
    return check


check_hvp = _public("check_hvp", "Check ``hvp(f, x, v)`` returns H v by double backward (H: f's Hessian at x).")
check_hvp_forward_over_reverse = _public(
    "check_hvp_forward_over_reverse", "Check ``hvp_forward(f, x, v)`` returns H v by forward-over-reverse.")
check_penalty_value = _public("check_penalty_value", "Check ``gradient_penalty(f, w, x)``'s value.")
check_penalty_gradient = _public(
    "check_penalty_gradient", "Check the gradient of ``gradient_penalty(f, w, x)`` with respect to w.")
PUBLIC = {"check_hvp": check_hvp, "check_hvp_forward_over_reverse": check_hvp_forward_over_reverse,
          "check_penalty_value": check_penalty_value, "check_penalty_gradient": check_penalty_gradient}


def _register() -> None:
    """Add these checks to ``grader.basics``' tables and names (test cells call ``basics.check_hvp(...)``)."""
    basics.SIGNATURES.update(SIGNATURES)
    basics.SECTIONS.update(SECTIONS)
    basics.MISTAKE_SECTIONS.update(MISTAKE_SECTIONS)
    basics._ERROR_MISTAKES.update(ERROR_MISTAKES)
    basics.MISTAKES.update(MISTAKES)
    basics.CHECKS.update(CHECKS)
    for name, check in PUBLIC.items():
        setattr(basics, name, check)
    basics.__all__ += [name for name in PUBLIC if name not in basics.__all__]


_register()
