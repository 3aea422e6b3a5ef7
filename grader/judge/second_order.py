"""The trusted side of notebook 4's function checks: Hessian-vector products (hvp, hvp_forward) and the gradient
penalty. One judge per probe, as ``grader.judge.autograd_basics``; PyTorch's answers by ``torch.autograd.grad``.

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

The observer's probe functions also record, each time they are called, how: under which ``torch.func``
transforms (grad, jvp, vmap) and with a forward-mode tangent or not. That tells double backward,
forward-over-reverse and "the whole Hessian, then a product" apart.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import torch

from grader.judge.function_fields import (_Fail, _Malformed, _as_result, _as_tensor, _bool_field, _close, _difference,
                                          _fail_if_modified, _fail_if_raised, _field, _grad_field, _result_value,
                                          _str_field, _tensor_field)
from grader.spec.exercises import reference_hessian
from grader.spec.function_probes import _HvpProbe, _PenaltyProbe, _leaf, grader_penalty, penalty_reference
from grader.spec.functions import Obs, _first_line, _type_name
from grader.spec.messages import say

MAX_CALLS = 50  # calls of a probe function recorded (the observer's ``MAX_CALLS``: more is malformed)


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
            return say("unfit_not_implemented_because", text=text) if text else say("unfit_not_implemented")
        return f"{_first_line(_str_field(error, 'type') or '', 100) or 'Exception'}: {text}"
    record = _field(own, "value")
    values = expected()
    value = _result_value(record)
    if value is None or value.shape != values.shape or not _close(value.to(torch.float64), values):
        return say("unfit_wrong_result")
    return None


def _excused(p: Any, why: str) -> str:
    """The note a check adds to its summary for a probe it did not count (``grader.spec.messages``' own_function_excused)."""
    from grader.spec import messages

    note = messages.message("own_function_excused")
    fields = {"names": ", ".join(p.uses), "why": why, "cells": ", ".join(f"`{n.lower()}`" for n in p.uses)}
    return say("title_then_hint", title=note.title.format(**fields), hint=note.hint.format(**fields))


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
            failure.fields["names"] = ", ".join(p.uses) or say("one_of_your_functions")
        raise
    _fail_if_modified("x", p.x, _tensor_field(obs, "x_after"), requires_grad=True)
    if _bool_field(obs, "x_requires_grad") or _grad_field(obs, "x_grad_after", p.x.shape) is not None:
        raise _Fail("hvp_changed_x", where="x.requires_grad / x.grad", expected="False / None",
                    received=say("changed_by_your_function"))
    expected, gradient, hess = _hvp_reference(p)
    got = _as_result(_field(obs, "result"), p.x.shape, "hvp_wrong_shape",
                     # torch.func.jvp's (value, tangent) pair: its hint is about the tangent, not autograd.grad's [0]
                     returned_tuple="hvp_returned_jvp_pair" if check == "check_hvp_forward_over_reverse"
                     else "returned_tuple")
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


def _penalty_expected(p: _PenaltyProbe) -> torch.Tensor:
    """PyTorch's [penalty, d penalty / d w] on probe p (what ``grader_penalty`` gives through fit Functions)."""
    return grader_penalty(p.reference(), _leaf(p.w), p.x).detach()


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
        if p.optional:
            return  # not pasted into notebook 5's section 0: nothing to judge through it
        raise _Fail("hvp_needs_function", names=", ".join(missing), probe_function=p.desc)
    if p.uses:  # the rule of _judge_hvp_probe: a probe through an unfit Function of the student's is not charged
        why = _own_unfit(p, obs, lambda: _penalty_expected(p))
        if why is not None and not _penalty_right(check, p, obs):
            return _excused(p, why)
    _fail_if_raised("penalty", obs)
    _fail_if_modified("w", p.w, _tensor_field(obs, "w_after"))
    if check != "check_penalty_value":  # (the points table: "x and w.grad left alone" is penalty-gradient's; a
        # right value keeps its point whatever it did to the caller's x: issue 32, CycleGAN's requires_grad_(True))
        _fail_if_modified("x", p.x, _tensor_field(obs, "x_after"))
        # The caller's x comes without requires_grad and without .grad, and must leave as it came (the docstring's
        # rule: a leaf of your own, x.detach().requires_grad_()); each flag is read from what the observer saw.
        if _bool_field(obs, "x_requires_grad") or _grad_field(obs, "x_grad_after", p.x.shape) is not None:
            raise _Fail("penalty_changed_x", where="x.requires_grad / x.grad", expected="False / None",
                        received=say("changed_by_your_function"))
        if _grad_field(obs, "w_grad_after", p.w.shape) is not None:
            raise _Fail("penalty_changed_w_grad", where="w.grad", expected="None", received=say("a_tensor"))
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
        raise _Fail("penalty_no_create_graph", where="d penalty / d w", expected=say("a_gradient"), received="None")
    received = _as_tensor(received, "'gradient'")
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
