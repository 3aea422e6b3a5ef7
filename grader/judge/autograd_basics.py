"""The trusted side of notebook 1's function checks (vjp, accumulate, secondderiv): one judge per probe, which
reads the observation (``grader.judge.function_fields``), rebuilds PyTorch's answer for the probe
(``grader.spec.function_probes``) and raises ``_Fail`` with the mistake it names. Never runs student code.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from grader.judge.function_fields import (_Fail, _Malformed, _as_result, _bool_field, _close, _difference,
                                          _expect_grad_before, _fail_if_modified, _fail_if_raised, _field,
                                          _fmt_shape, _grad_changed, _grad_field, _mismatch, _optional_tensor_field,
                                          _result_value, _same, _tensor_field)
from grader.spec.function_probes import (DTYPE, _BatchProbe, _ElementwiseProbe, _VjpProbe, _batch_grads,
                                         _elementwise_derivatives, _vjp_reference)
from grader.spec.functions import Obs, _type_name
from grader.spec.messages import say


# ---------------------------------------------------------------------------------------------
# exercise "vjp": vector_jacobian_product(f, x, v)


def _judge_vjp(p: _VjpProbe, result: Any) -> None:
    expected, jac = _vjp_reference(p)
    value = _result_value(result)
    if value is not None and value.shape == jac.shape and value.shape != p.x.shape:
        raise _Fail("vjp_returned_jacobian", received_shape=tuple(value.shape), expected_shape=tuple(p.x.shape),
                    expected=say("shape_value", shape=_fmt_shape(p.x.shape)),
                    received=say("shape_value", shape=_fmt_shape(value.shape)))
    if (value is not None and value.dim() == 2 and value.t().shape == p.x.shape and value.is_floating_point()
            and _close(value.t().to(DTYPE), expected) and not _close(value.to(DTYPE), expected)):
        raise _Fail("vjp_transposed", received_shape=tuple(value.shape), expected_shape=tuple(p.x.shape),
                    expected=say("shape_value", shape=_fmt_shape(p.x.shape)),
                    received=say("shape_transpose_right", shape=_fmt_shape(value.shape)))
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


# ---------------------------------------------------------------------------------------------
# exercise "accumulate": mean_gradient_over_batches(loss_fn, w, batches)


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
            changed["where"] = say("after_zeroing_w_grad", where=changed["where"])
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


# ---------------------------------------------------------------------------------------------
# exercise "secondderiv": second_derivative(f, x)


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


# the per-probe judges of the exercises whose function takes x
#: Every public check, by name: the exercise, its keyword arguments with defaults, how it observes and judges.
_JUDGE_VJP = _judge_x_probe("vjp", "check_vjp_keeps_grad", "vjp_changed_x_grad", _judge_vjp)
_JUDGE_SECOND = _judge_x_probe("secondderiv", "check_second_derivative_general", "second_changed_x_grad", _judge_second)
