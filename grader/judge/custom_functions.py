"""The judge of the custom-Function checks: compares what the observer recorded with PyTorch's own ops on the same
probes and names the mistake (raises ``CheckFailed`` with a finding).

A check has two halves. ``grader.sandboxed.observe`` runs the student's Function on small float64 probes and
records what it did (plain data). The judge here compares those observations with PyTorch's own
ops on the same probes (micrograd's rule: the reference is PyTorch itself, in float64) and names
the mistake. In a student's notebook both halves run in the student's kernel (``grader.checks``, the facade test
cells call); in trusted grading (``grader.judge.runner``) the observations come from the sandbox and only the judge
decides, so nothing the student's code patches can turn a wrong derivative into points.

Besides values, the checks catch what ``gradcheck`` / ``gradgradcheck`` miss: a result not made by
the student's Function, tensors kept on ``ctx``, an unsummed bias gradient the engine sums
silently, float32 gradients, and ``ctx.needs_input_grad`` misuse.

The checks it judges are the registry's (``grader.spec.registry``, engine ``custom_functions``); the exercises are
``grader.spec.exercises.EXERCISES``: a new exercise needs nothing here.
"""

from __future__ import annotations

import re
from typing import Any, Callable, NoReturn, Sequence

import torch

from grader.judge import diagnosis as dx
from grader.judge.diagnosis import CheckFailed, Finding
from grader.spec import registry, vectors
from grader.spec.messages import say
from grader.spec.exercises import Exercise, Probe, get, reference_jvp, reference_per_sample_grad, reference_vmap

Obs = dict[str, Any]
_NOT_ABOUT_THE_ANSWER = ("grader_error", "incomplete_observations", "observation_missing")


class _Judge:
    """Judges one check of one exercise and builds the findings it may raise."""

    def __init__(self, ex: Exercise, name: str):
        self.ex, self.name = ex, name

    def fail(self, mistake: str, probe: Probe | None = None, **fields: Any) -> NoReturn:
        where = fields.pop("where", "")
        expected = fields.pop("expected", None)
        received = fields.pop("received", None)
        code = fields.pop("code", "")
        fields.setdefault("formula", self.ex.formula)
        fields.setdefault("classes", " / ".join(self.ex.classes))
        fields.setdefault("cls", self.ex.title)
        fields.setdefault("names", ", ".join(self.ex.input_names))
        raise CheckFailed(Finding(
            exercise=self.ex.id, check=self.name, mistake=mistake, probe=probe.describe() if probe else "",
            where=where, expected=expected, received=received,
            section="" if mistake in _NOT_ABOUT_THE_ANSWER else self.ex.section(self.name, mistake),
            fields=fields, code=code))

    def fail_error(self, error: Obs, probe: Probe | None) -> NoReturn:
        """The student's code raised: name the mistake from what the observer recorded."""
        mistake, fields = str(error.get("mistake", "raised_error")), dict(error.get("fields", {}))
        fields.setdefault("error_type", error.get("type", "Exception"))
        fields.setdefault("error", error.get("message", ""))
        fields.setdefault("stage", say("stage_running_code"))
        if mistake == "not_implemented":
            fields["function"] = error.get("function") or self.ex.title
        if mistake == "wrong_gradient_shape" and probe is not None:
            mistake, fields = _explain_shape_error(fields, probe)
        if self.ex.id == "sortvalues" and mistake == "raised_error":
            # scatter/gather along another dimension than the sort's (the last): the engine's IndexError names it
            wrong_dim = re.search(r"out of bounds for dimension (\d+) with size", str(fields.get("error", "")))
            if wrong_dim and probe is not None and int(wrong_dim.group(1)) != probe.inputs[0].dim() - 1:
                mistake = "sort_scatter_wrong_dim"
                fields["dim"] = wrong_dim.group(1)
        if mistake == "gradient_for_non_tensor" and probe is not None:
            position = int(fields.get("position", 1)) - 1  # the engine counts from 1 here
            if 0 <= position < len(probe.names):
                fields.update(name=probe.names[position], value=repr(probe.inputs[position]))
        if mistake not in _KNOWN:
            mistake = "raised_error"
        self.fail(mistake, probe, code=str(error.get("code", "")), **fields)


def _at(what: str, where: str) -> str:
    """'gradient for `x` at [1, 2]' (a finding's where, in the notebook's language)."""
    return say("where_at", what=what, where=where)


def _gradient_of(name: str) -> str:
    return say("where_gradient", name=name)


def _second_of(name: str) -> str:
    return say("where_second_derivative", name=name)


def _complete(judge: _Judge, probe: Probe | None, received: Any, expected: int, what: str, per: str) -> list[Any]:
    """``received`` as a list of exactly ``expected`` items; anything else fails the check (never scored).

    Observations come from an untrusted process: an empty or truncated list must not pass by comparing
    nothing, as ``zip`` would let it."""
    n = len(received) if isinstance(received, (list, tuple)) else 0
    if not isinstance(received, (list, tuple)) or n != expected:
        judge.fail("incomplete_observations", probe, n_received=n, n_expected=expected, what=what, per=per)
    return list(received)


def _pairs(*sequences: Sequence[Any]) -> Any:
    """zip that refuses sequences of different lengths (callers check lengths first with ``_complete``)."""
    return zip(*sequences, strict=True)


def _known() -> set[str]:
    from grader.spec.messages import EN

    return set(EN)


_KNOWN = _known()


def _explain_shape_error(found: dict[str, Any], probe: Probe) -> tuple[str, dict[str, Any]]:
    """Turn the engine's 'invalid gradient at index i - got [..] but expected [..]' into a named mistake."""
    index = int(found.get("index", 0))
    got = tuple(int(s) for s in str(found.get("got", "")).split(",") if s.strip())
    want = tuple(int(s) for s in str(found.get("want", "")).split(",") if s.strip())
    name = probe.names[index] if index < len(probe.names) else say("input_number", index=index)
    fields = {**found, "name": name, "received_shape": got, "expected_shape": want}
    shapes = {n: tuple(x.shape) for n, x in _pairs(probe.names, probe.inputs) if isinstance(x, torch.Tensor)}
    others = [n for n, s in shapes.items() if s == got and n != name]
    if others:
        return "gradients_in_wrong_order", {**fields, "other": others[0]}
    if len(got) == 2 and got == want[::-1]:
        return "transposed_gradient", fields
    return "wrong_gradient_shape", fields


# --- shared judgments ----------------------------------------------------------------------------


def _output(judge: _Judge, probe: Probe, obs: Obs) -> torch.Tensor:
    """The forward output, after checking it is one tensor made by the student's custom Function."""
    if "error" in obs:
        judge.fail_error(obs["error"], probe)
    if obs.get("type") != "Tensor" and len(judge.ex.outputs) > 1:
        judge.fail("wrong_outputs", probe, name=obs.get("name", say("your_function")), type=obs.get("type"),
                   n_expected=len(judge.ex.outputs), outputs=", ".join(judge.ex.outputs))
    if obs.get("subclass"):  # the typed boundary: exactly a torch.Tensor (grader.sandboxed.typed)
        judge.fail("tensor_subclass", probe, name=obs.get("name", say("your_function")), type=str(obs["subclass"]))
    if obs.get("type") != "Tensor":  # e.g. a wrapper returning all of Sinh's outputs
        judge.fail("returns_tuple", probe, name=obs.get("name", say("your_function")), type=obs.get("type"))
    if not obs.get("has_graph"):
        made = obs.get("made_by_function")
        if len(judge.ex.outputs) > 1 and isinstance(made, list) and any(m is True for m in made[1:]):
            judge.fail("first_output_marked_non_differentiable", probe, output=judge.ex.outputs[0])
        judge.fail("no_graph", probe)
    between = obs.get("between")
    if obs.get("node") is None and isinstance(between, dict) and between.get("after"):
        judge.fail("output_after_function", probe, after=str(between["after"]), cls=str(between.get("cls")))
    if obs.get("node") is None and isinstance(between, dict) and between.get("before"):
        judge.fail("function_of_computed_input", probe, before=str(between["before"]), cls=str(between.get("cls")))
    if obs.get("node") is None:
        found = str(obs.get("found"))
        judge.fail("not_custom_function", probe,
                   found=say("pytorch_own_op", found=found) if found[-1:].isdigit() else found)
    value = obs["value"]
    assert isinstance(value, torch.Tensor)
    return value


def _fail_if_autograd(judge: _Judge, probe: Probe, obs: Obs) -> None:
    """A derivative check fails when the student's own code (its forward, backward or jvp) started PyTorch's
    differentiation on this probe (``grader.sandboxed.autograd_env``): the derivative would be PyTorch's."""
    flag = _origin_observed(judge, probe, obs)
    if flag:
        judge.fail("derivative_by_autograd", probe, cls=str(obs.get("forward", {}).get("node")))


def _origin_observed(judge: _Judge, probe: Probe, obs: Obs) -> bool:
    """Whether the student's code started PyTorch's differentiation on this probe; an observation that does not say
    is incomplete (the judge scores complete observations only)."""
    flag = obs.get("autograd_by_student")
    if not isinstance(flag, bool):
        judge.fail("observation_missing", probe, key="autograd_by_student")
    return flag


def _close(probe: Probe, a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal within the tolerances of the probe's dtype (float32 probes are compared at float32 precision)."""
    return dx.close(a, b, **dx.tolerances(probe.dtype))


def _fail_if_float32_precision(judge: _Judge, probe: Probe, e: torch.Tensor, r: torch.Tensor, name: str,
                               what: str) -> None:
    """A float64 result right only to float32 precision: backward computes in float32 somewhere."""
    if probe.dtype == torch.float64 and dx.close(r, e, **dx.tolerances(torch.float32)):
        where, ev, rv = dx.worst_element(e, r, digits=12)
        judge.fail("float32_precision", probe, name=name, where=_at(what, where), expected=ev,
                   received=rv)


def _fail_if_overflow(judge: _Judge, probe: Probe, e: torch.Tensor, r: torch.Tensor, what: str, mistake: str,
                      **fields: Any) -> None:
    """inf or nan where PyTorch's result is finite: a formula that overflows (e.g. eˣ for large x)."""
    bad = torch.isfinite(e) & ~torch.isfinite(r)
    if bool(bad.any()):
        index = tuple(int(i) for i in bad.nonzero()[0])
        where = "[" + ", ".join(map(str, index)) + "]" if index else say("scalar")
        x = next((t for t in probe.inputs if isinstance(t, torch.Tensor)), None)
        at = x.detach().reshape(-1)[0] if x is not None and x.dim() == 0 else (
            x.detach()[index] if x is not None and x.shape == e.shape else None)
        judge.fail(mistake, probe, where=_at(what, where), expected=dx.fmt_number(e[index].item()),
                   received=str(r[index].item()), value=str(r[index].item()),
                   x=dx.fmt_number(at.item()) if at is not None else say("a_large_value"), **fields)


def _plain(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(x.detach() if isinstance(x, torch.Tensor) else x for x in inputs)


def _forward_is_right(ex: Exercise, probe: Probe, out: torch.Tensor) -> bool:
    """forward's values are right, apart from overflow (inf/nan where PyTorch is finite): that costs the forward
    check alone, while the derivative checks still judge backward, which does not use those values."""
    expected = ex.reference_output(*_plain(probe.inputs))
    if out.shape != expected.shape or out.dtype != expected.dtype:
        return False
    overflow = torch.isfinite(expected) & ~torch.isfinite(out)
    return _close(probe, torch.where(overflow, expected, out), expected)


def _diff_names(probe: Probe, inputs: tuple[Any, ...]) -> list[str]:
    return [n for n, x in _pairs(probe.names, inputs) if isinstance(x, torch.Tensor) and x.requires_grad]


def _reference_vjp(ex: Exercise, inputs: tuple[Any, ...], v: torch.Tensor) -> tuple[torch.Tensor, ...]:
    diff = [x for x in inputs if isinstance(x, torch.Tensor) and x.requires_grad]
    return torch.autograd.grad(ex.reference_output(*inputs), diff, v)


def _raw_grads(judge: _Judge, probe: Probe, raw: Obs) -> list[Any]:
    """What backward returned, one value per forward input, or the check fails.

    Like the engine, extra trailing Nones are dropped: ``LinearFunction.apply(x, w)`` may return
    ``(grad_input, grad_weight, None)``."""
    grads = raw["grads"]
    if not isinstance(grads, (list, tuple)):
        judge.fail("incomplete_observations", probe, n_received=0, n_expected=len(probe.inputs), what="gradients",
                   per="inputs")
    grads, n = list(grads), len(probe.inputs)
    if len(grads) > n and all(g is None for g in grads[n:]):
        grads = grads[:n]
    if len(grads) != n:
        judge.fail("wrong_number_of_gradients", probe, cls=str(raw.get("cls")), n_received=len(grads), n_expected=n,
                   names=", ".join(probe.names))
    return grads


def _judge_raw(judge: _Judge, probe: Probe, raw: Obs, values: bool = True) -> None:
    """Count and None for non-tensors; then (``values``) shapes and dtypes, as backward returned them."""
    if "error" in raw:
        judge.fail_error(raw["error"], probe)
    cls, grads, inputs = str(raw.get("cls")), _raw_grads(judge, probe, raw), probe.inputs
    names = ", ".join(probe.names)
    for name, x, g in _pairs(probe.names, inputs, grads):
        if not isinstance(x, torch.Tensor):
            if g is not None:
                judge.fail("gradient_for_non_tensor", probe, cls=cls, name=name, value=repr(x),
                           where=_gradient_of(name))
            continue
        if g is None:
            if x.requires_grad:
                judge.fail("missing_gradient", probe, cls=cls, name=name)
            continue
        if not values:
            continue
        if isinstance(g, dict) and g.get("subclass"):
            judge.fail("tensor_subclass", probe, name=f"{cls}.backward", type=str(g.get("other")))
        if not isinstance(g, torch.Tensor):
            judge.fail("raised_error", probe, error_type="TypeError", stage=say("stage_calling_backward", cls=cls),
                       error=say("gradient_not_a_tensor", name=name, type=g.get('other', '?')))
        fields = {"name": name, "received_shape": tuple(g.shape), "expected_shape": tuple(x.shape), "cls": cls, "names": names}
        if g.shape != x.shape:
            others = [n for n, o in _pairs(probe.names, inputs) if isinstance(o, torch.Tensor) and n != name and o.shape == g.shape]
            if others:
                judge.fail("gradients_in_wrong_order", probe, other=others[0], **fields)
            if g.dim() == 2 and tuple(g.shape) == tuple(x.shape)[::-1]:
                judge.fail("transposed_gradient", probe, **fields)
            try:
                reducible = torch.broadcast_shapes(g.shape, x.shape) == g.shape
            except RuntimeError:
                reducible = False
            judge.fail("gradient_not_reduced" if reducible else "wrong_gradient_shape", probe, **fields)
        if g.dtype != x.dtype:
            lost = g.is_floating_point() and torch.finfo(g.dtype).bits < torch.finfo(x.dtype).bits
            judge.fail("gradient_dtype" if lost or not g.is_floating_point() else "gradient_dtype_upcast", probe,
                       name=name, received_dtype=g.dtype, expected_dtype=x.dtype)


def _compare_gradients(judge: _Judge, probe: Probe, names: list[str], expected: Sequence[torch.Tensor],
                       received: Sequence[Any], unit: Sequence[torch.Tensor] | None, cls: str) -> None:
    received = _complete(judge, probe, received, len(names), say("obs_gradients"), say("obs_inputs_requiring_grad"))
    for j, (name, e, r) in enumerate(_pairs(names, expected, received)):
        if r is None:
            judge.fail("missing_gradient", probe, cls=cls, name=name)
        if not isinstance(r, torch.Tensor) or r.shape != e.shape:
            judge.fail("wrong_gradient_shape", probe, name=name, expected_shape=tuple(e.shape),
                       received_shape=tuple(getattr(r, "shape", ())))
        if dx.close(r, e, **dx.tolerances(probe.dtype, first_derivatives=True)):
            continue
        _fail_if_overflow(judge, probe, e, r, _gradient_of(name), "gradient_overflow", name=name)
        _fail_if_float32_precision(judge, probe, e, r, name, _gradient_of(name))
        others = [names[k] for k, ek in enumerate(expected) if k != j and _close(probe, r, ek)]
        if others:
            judge.fail("gradients_in_wrong_order", probe, cls=cls, name=name, other=others[0], names=", ".join(probe.names))
        mistake, fields = dx.relate(e, r, without_grad_output=unit[j] if unit else None, **dx.tolerances(probe.dtype))
        where, ev, rv = dx.worst_element(e, r)
        judge.fail(mistake or "wrong_gradient", probe, name=name, where=_at(_gradient_of(name), where),
                   expected=ev, received=rv, **fields)


def _judge_gradcheck(judge: _Judge, probe: Probe, verdict: Obs, second: bool) -> None:
    """gradcheck/gradgradcheck ran next to the student's code: their verdict can fail a check, never pass one."""
    if verdict.get("ok") or probe.dtype != torch.float64:  # finite differences only mean something in float64
        return
    if "error" in verdict:
        judge.fail_error(verdict["error"], probe)
    judge.fail("gradgradcheck_failed" if second else "gradcheck_failed", probe, detail=verdict.get("detail", ""))


# --- the four judgments ------------------------------------------------------------------------------


def judge_forward(judge: _Judge, probes: list[Probe], observations: list[Obs]) -> str:
    ex = judge.ex
    for probe, obs in _pairs(probes, observations):
        out = _output(judge, probe, obs["forward"])
        plain = _plain(probe.inputs)
        expected = ex.reference_output(*plain)
        if len(ex.outputs) > 1:
            _judge_other_outputs(judge, probe, obs["forward"])
        if out.shape != expected.shape:
            judge.fail("forward_wrong_shape", probe, received_shape=tuple(out.shape), expected_shape=tuple(expected.shape))
        if out.dtype != expected.dtype:
            judge.fail("forward_wrong_dtype", probe, received_dtype=out.dtype, expected_dtype=expected.dtype)
        if not _close(probe, out, expected):
            _fail_if_overflow(judge, probe, expected, out, "output", "forward_overflow")
            where, e, r = dx.worst_element(expected, out)
            mistake = "forward_wrong"
            if ex.id == "linear" and len(plain) > 2 and plain[2] is not None and _close(probe, out, ex.reference(plain[0], plain[1], None)):
                mistake = "forward_missing_bias"
            judge.fail(mistake, probe, where=f"output{where}", expected=e, received=r)
    return say("summary_forward", formula=ex.formula)


def _judge_other_outputs(judge: _Judge, probe: Probe, obs: Obs) -> None:
    """Every output after the first (e.g. SortValues' indices) equals the reference's, in its dtype."""
    ex = judge.ex
    expected = ex.reference_outputs(*_plain(probe.inputs))
    received = _complete(judge, probe, obs["outputs"], len(ex.outputs), "outputs", "call")
    for k, (name, e, r) in enumerate(_pairs(ex.outputs, expected, received)):
        if k == 0:
            continue
        if not isinstance(r, torch.Tensor) or r.shape != e.shape:
            judge.fail("forward_wrong_shape", probe, received_shape=tuple(getattr(r, "shape", ())),
                       expected_shape=tuple(e.shape), output=name)
        if r.dtype != e.dtype:
            judge.fail("output_wrong_dtype", probe, output=name, received_dtype=r.dtype, expected_dtype=e.dtype)
        if not _close(probe, r, e):
            where, ev, rv = dx.worst_element(e, r)
            judge.fail("output_wrong", probe, output=name, where=f"{name}{where}", expected=ev, received=rv)


def judge_first_derivatives(judge: _Judge, probes: list[Probe], observations: list[Obs]) -> str:
    ex = judge.ex
    for position, (probe, obs) in enumerate(_pairs(probes, observations)):
        out = _output(judge, probe, obs["forward"])
        _fail_if_autograd(judge, probe, obs)
        if not _forward_is_right(ex, probe, out):
            judge.fail("forward_wrong_before_derivatives", probe)
        _judge_raw(judge, probe, obs["raw"])
        if "error" in obs["vjp"]:
            judge.fail_error(obs["vjp"]["error"], probe)
        v = vectors.grad_output(out.shape, probe.seed, probe.dtype)
        inputs = probe.fresh()
        expected = _reference_vjp(ex, inputs, v)
        unit = _reference_vjp(ex, probe.fresh(), torch.ones_like(v))
        if ex.id == "sortvalues":
            _fail_if_sort_gathers(judge, probe, v, expected[0], obs["vjp"]["grads"])
        _compare_gradients(judge, probe, _diff_names(probe, inputs), expected, obs["vjp"]["grads"], unit,
                           str(obs["raw"].get("cls")))
        if registry.gradchecked(judge.name, position) and bool(torch.isfinite(out).all()):
            _judge_gradcheck(judge, probe, obs["gradcheck"], second=False)  # (finite differences of an overflow: nothing)
    return say("summary_first_derivatives")


def _why_second_derivative_missing(ex: Exercise, obs: Obs) -> tuple[str, dict[str, Any]]:
    without_history = dx.capped_names(obs["forward"].get("without_history", []))
    if ex.backward_classes:  # the gradient must come from CubeBackward, whose own backward is the point
        first = obs["first"]
        for k, node in enumerate(first.get("backward_node", [])):
            if node is None:
                mistake, fields = dx.why_untracked_source(obs.get("backward_source", ""), without_history)
                return (mistake if mistake != "untracked_backward" else "backward_not_through_function",
                        {**fields, "classes": " / ".join(ex.backward_classes)})
            return dx.why_untracked_source(first["backward_node_sources"][k],
                                           dx.capped_names(first["backward_node_without_history"][k]))
    return dx.why_untracked_source(obs.get("backward_source", ""), without_history)


def judge_second_derivatives(judge: _Judge, probes: list[Probe], observations: list[Obs]) -> str:
    ex = judge.ex
    for position, (probe, obs) in enumerate(_pairs(probes, observations)):
        out = _output(judge, probe, obs["forward"])
        _fail_if_autograd(judge, probe, obs)
        if not _forward_is_right(ex, probe, out):
            judge.fail("forward_wrong_before_derivatives", probe)
        first = obs["first"]
        if "error" in first:
            judge.fail_error(first["error"], probe)
        inputs = probe.fresh()
        diff = [x for x in inputs if isinstance(x, torch.Tensor) and x.requires_grad]
        v = vectors.grad_output(out.shape, probe.seed, probe.dtype).requires_grad_()
        ref_grads = torch.autograd.grad(ex.reference_output(*inputs), diff, v, create_graph=True)
        received_first = _complete(judge, probe, first["grads"], len(ref_grads), say("obs_first_derivatives"),
                                   say("obs_inputs_requiring_grad"))
        if ex.backward_classes:
            for key in ("backward_node", "backward_node_sources", "backward_node_without_history"):
                _complete(judge, probe, first[key], len(received_first), say("obs_entries_of", key=key),
                          say("obs_gradients"))
        if any(not isinstance(g, torch.Tensor) or not _close(probe, g, e) for g, e in _pairs(received_first, ref_grads)):
            judge.fail("first_order_wrong_before_second", probe)
        second = obs["second"]
        if "error" in second:
            judge.fail_error(second["error"], probe)
        u = vectors.second_vectors([x.shape for x in diff], probe.seed, probe.dtype)
        names = _diff_names(probe, inputs) + ["grad_output"]
        targets = [*diff, v]
        expected = torch.autograd.grad(list(ref_grads), targets, u, allow_unused=True)
        expected = [e if e is not None else torch.zeros_like(t) for e, t in _pairs(expected, targets)]
        received = _complete(judge, probe, second["grads"], len(targets), say("obs_second_derivatives"),
                             say("obs_inputs_and_grad_output"))
        if not isinstance(obs["backward_source"], str):
            judge.fail("observation_missing", probe, key=say("obs_backward_source"))
        if not isinstance(obs["once_differentiable"], bool):
            judge.fail("observation_missing", probe, key=say("obs_once_differentiable"))
        cls = str(obs["forward"].get("node"))
        for j, (name, e, r) in enumerate(_pairs(names, expected, received)):
            if r is None:
                if bool(torch.all(e == 0)):
                    continue
                if obs.get("sinh_extra_outputs_ignored"):
                    judge.fail("extra_output_gradients_ignored", probe, name=name)
                mistake, fields = (_why_second_derivative_missing(ex, obs) if name != "grad_output"
                                   else ("second_derivative_missing", {}))
                if obs["once_differentiable"] is True:
                    mistake, fields = "once_differentiable", {}
                judge.fail(mistake, probe, name=name, where=_second_of(name), **fields)
            if not isinstance(r, torch.Tensor) or r.shape != e.shape:
                judge.fail("second_derivative_wrong", probe, name=name, where=_second_of(name))
            if _close(probe, r, e):
                continue
            if obs.get("sinh_extra_outputs_ignored"):
                judge.fail("extra_output_gradients_ignored", probe, name=name)
            _fail_if_overflow(judge, probe, e, r, _second_of(name), "second_derivative_overflow",
                              name=name)
            _fail_if_float32_precision(judge, probe, e, r, name, _second_of(name))
            where, ev, rv = dx.worst_element(e, r)
            others = [names[k] for k, ek in enumerate(expected) if k != j and _close(probe, r, ek)]
            backward_cls = ex.backward_classes[0] if ex.backward_classes else cls
            if others:
                judge.fail("double_backward_wrong_order", probe, name=name, other=others[0], cls=backward_cls,
                           where=_at(_second_of(name), where), expected=ev, received=rv)
            judge.fail("second_derivative_wrong", probe, name=name, where=_at(_second_of(name), where),
                       expected=ev, received=rv)
        # Right second derivatives without CubeBackward: the structure check alone costs the point.
        if registry.gradchecked(judge.name, position) and bool(torch.isfinite(out).all()):
            _judge_gradcheck(judge, probe, obs["gradgradcheck"], second=True)
    return say("summary_second_derivatives")


def _fail_if_sort_gathers(judge: _Judge, probe: Probe, v: torch.Tensor, expected: torch.Tensor, grads: Any) -> None:
    """SortValues' backward gathering grad_values with the permutation instead of scattering them back."""
    received = grads[0] if isinstance(grads, (list, tuple)) and len(grads) == 1 else None
    if not isinstance(received, torch.Tensor) or received.shape != expected.shape or _close(probe, received, expected):
        return
    indices = torch.sort(probe.inputs[0].detach(), dim=-1).indices
    if _close(probe, received, v.gather(-1, indices)):
        where, ev, rv = dx.worst_element(expected, received)
        judge.fail("sort_gather_not_scatter", probe, where=_at(_gradient_of("x"), where), expected=ev, received=rv)


def _raw_gradients_right(ex: Exercise, probe: Probe, obs: Obs) -> bool:
    """Whether backward's raw gradients equal PyTorch's (so a structure finding can say the values are right)."""
    try:
        out = obs["forward"]["value"]
        v = vectors.grad_output(out.shape, probe.seed, probe.dtype)
        expected = _reference_vjp(ex, probe.fresh(), v)
        raw = list(obs["raw"]["grads"])[:len(probe.inputs)]
        received = [g for g, x in _pairs(raw, probe.inputs) if isinstance(x, torch.Tensor)]
        return len(received) == len(expected) and all(
            isinstance(r, torch.Tensor) and _close(probe, r, e) for r, e in _pairs(received, expected))
    except Exception:
        return False


def judge_structure(judge: _Judge, probes: list[Probe], observations: list[Obs]) -> str:
    ex = judge.ex
    for probe, obs in _pairs(probes, observations):
        _output(judge, probe, obs["forward"])
        _origin_observed(judge, probe, obs)  # (structure does not score where derivatives come from; it is observed)
        attrs = dx.capped_names(obs["forward"].get("ctx_attrs", []))
        if attrs:
            judge.fail("tensor_on_ctx", probe, cls=obs["forward"].get("node"), attrs=dx.name_list(attrs),
                       saved=int(obs["forward"].get("saved", 0)))
        if len(ex.outputs) > 1:
            marks = _complete(judge, probe, obs["forward"]["requires_grad"], len(ex.outputs),
                              say("obs_requires_grad_flags"),
                              "output")
            for name, requires_grad in list(_pairs(ex.outputs, marks))[1:]:
                if requires_grad is not False:
                    judge.fail("output_not_marked_non_differentiable", probe, output=name)
        style = obs["style"]["setup_context"]
        if not isinstance(style, bool):
            judge.fail("observation_missing", probe, key=say("obs_function_style"))
        if ex.setup_context and style is not True:
            judge.fail("forward_takes_ctx", probe)
        _judge_raw(judge, probe, obs["raw"], values=False)  # values are the first-derivative check's job
        if ex.backward_classes:
            nodes = obs["backward_nodes"]
            if isinstance(nodes, dict) and "error" in nodes:
                judge.fail_error(nodes["error"], probe)
            nodes = _complete(judge, probe, nodes, len(_diff_names(probe, probe.inputs)), say("obs_backward_nodes"),
                               say("obs_gradients"))
            for node in nodes:
                if node is None:
                    right = _raw_gradients_right(ex, probe, obs)
                    judge.fail("derivatives_right_not_through_function" if right else "backward_not_through_function",
                               probe, classes=" / ".join(ex.backward_classes))
                if dx.capped_names(node["ctx_attrs"]):
                    judge.fail("tensor_on_ctx", probe, cls=node["cls"], attrs=dx.name_list(dx.capped_names(node["ctx_attrs"])))
    # After the per-probe checks: None for a non-tensor is the first thing to fix.
    if len(ex.input_names) > 1:
        for probe, obs in _pairs(probes, observations):
            wanted = vectors.requires_grad_patterns(probe)
            patterns = _complete(judge, probe, obs["patterns"], len(wanted), say("obs_requires_grad_patterns"),
                                  say("obs_probe"))
            for pattern, pattern_obs in _pairs(wanted, patterns):
                if [int(i) for i in pattern_obs["pattern"]] != list(pattern):
                    judge.fail("observation_missing", probe,
                               key=say("obs_requires_grad_pattern", names=", ".join(probe.names[i] for i in pattern)))
                _judge_pattern(judge, probe, pattern_obs)
    return say("summary_structure")


def _judge_pattern(judge: _Judge, probe: Probe, obs: Obs) -> None:
    """With only some inputs requiring grad: correct gradients for those, None for the others."""
    pattern = [int(i) for i in obs["pattern"]]
    described = ", ".join(probe.names[i] for i in pattern)
    _output(judge, probe, obs["forward"])
    if "error" in obs["vjp"]:
        judge.fail_error(obs["vjp"]["error"], probe)
    inputs = tuple(x.detach().clone().requires_grad_(i in pattern) if isinstance(x, torch.Tensor) else x
                   for i, x in enumerate(probe.inputs))
    v = vectors.grad_output(obs["forward"]["value"].shape, probe.seed, probe.dtype)
    expected = _reference_vjp(judge.ex, inputs, v)
    names = _diff_names(probe, inputs)
    received = _complete(judge, probe, obs["vjp"]["grads"], len(names), say("obs_gradients"),
                         say("obs_inputs_requiring_grad"))
    for name, e, r in _pairs(names, expected, received):
        if not isinstance(r, torch.Tensor) or not _close(probe, r, e):
            judge.fail("needs_input_grad_wrong", probe, name=name, pattern=described)
    if "error" in obs["raw"]:
        judge.fail_error(obs["raw"]["error"], probe)
    for name, x, g in _pairs(probe.names, inputs, _raw_grads(judge, probe, obs["raw"])):
        if isinstance(x, torch.Tensor) and not x.requires_grad and g is not None:
            judge.fail("needs_input_grad_ignored", probe, name=name, cls=obs["raw"].get("cls"), pattern=described)


def _jvp_error(judge: _Judge, probe: Probe, error: Obs) -> NoReturn:
    """jvp reading ctx.saved_tensors that only save_for_backward filled: an empty tuple inside jvp."""
    code, message = str(error.get("code", "")), str(error.get("message", ""))
    if ".jvp" in code and "got 0" in message and (error.get("type") == "ValueError" or "saved_tensors" in code):
        judge.fail("jvp_not_saved_for_forward", probe, code=code)
    judge.fail_error(error, probe)


def judge_forward_mode(judge: _Judge, probes: list[Probe], observations: list[Obs]) -> str:
    ex = judge.ex
    for probe, obs in _pairs(probes, observations):
        out = _output(judge, probe, obs["forward"])
        _fail_if_autograd(judge, probe, obs)
        if not _forward_is_right(ex, probe, out):
            judge.fail("forward_wrong_before_derivatives", probe)
        primals = tuple(x.detach() for x in probe.inputs if isinstance(x, torch.Tensor))
        directions = tuple(vectors.tangents(probe))
        expected = reference_jvp(ex.reference_output, primals, directions)
        unit = reference_jvp(ex.reference_output, primals, tuple(torch.ones_like(t) for t in directions))
        for key, field, how in (("func_jvp", "value", "torch.func.jvp"), ("dual", "tangent", say("a_dual_tensor"))):
            entry = obs[key]
            if "error" in entry:
                _jvp_error(judge, probe, entry["error"])
            received = entry[field]
            if received is None:
                judge.fail("jvp_no_tangent", probe, how=how)
            if not isinstance(received, torch.Tensor) or received.shape != expected.shape:
                judge.fail("jvp_wrong_shape", probe, how=how, expected_shape=tuple(expected.shape),
                           received_shape=tuple(getattr(received, "shape", ())))
            if _close(probe, received, expected):
                continue
            _fail_if_overflow(judge, probe, expected, received, say("where_jvp", how=how), "jvp_overflow")
            where, ev, rv = dx.worst_element(expected, received)
            mistake = "jvp_ignores_tangent" if _close(probe, received, unit) else "jvp_wrong"
            judge.fail(mistake, probe, how=how, where=_at(say("where_jvp", how=how), where), expected=ev, received=rv)
    return say("summary_forward_mode")


def judge_vmap(judge: _Judge, probes: list[Probe], observations: list[Obs]) -> str:
    ex = judge.ex
    for probe, obs in _pairs(probes, observations):
        out = _output(judge, probe, obs["forward"])
        _fail_if_autograd(judge, probe, obs)
        if not _forward_is_right(ex, probe, out):
            judge.fail("forward_wrong_before_derivatives", probe)
        stacked = vectors.batched(probe)
        expected = reference_vmap(ex.reference_output, stacked)
        for key in ("vmap", "loop"):
            if "error" in obs[key]:
                judge.fail_error(obs[key]["error"], probe)
        loop, received = obs["loop"]["value"], obs["vmap"]["value"]
        if not isinstance(loop, torch.Tensor) or not _close(probe, loop, expected):
            judge.fail("forward_wrong", probe, where=say("where_a_vmap_sample"))
        if not isinstance(received, torch.Tensor) or received.shape != expected.shape:
            judge.fail("vmap_wrong_shape", probe, expected_shape=tuple(expected.shape),
                       received_shape=tuple(getattr(received, "shape", ())))
        if not _close(probe, received, loop):
            where, ev, rv = dx.worst_element(loop, received)
            judge.fail("vmap_wrong", probe, where=_at(say("where_vmap_result"), where), expected=ev, received=rv)
        if "error" in obs["vmap_grad"]:
            judge.fail_error(obs["vmap_grad"]["error"], probe)
        grads = reference_per_sample_grad(ex.reference_output, stacked)
        received = obs["vmap_grad"]["value"]
        if not isinstance(received, torch.Tensor) or received.shape != grads.shape or not _close(probe, received, grads):
            where, ev, rv = dx.worst_element(grads, received) if isinstance(received, torch.Tensor) and \
                received.shape == grads.shape else ("", None, None)
            judge.fail("vmap_grad_wrong", probe, where=_at(say("where_per_sample_gradient"), where) if where else "",
                       expected=ev, received=rv)
    return say("summary_vmap", batch=vectors.BATCH)


JUDGES: dict[str, Callable[[_Judge, list[Probe], list[Obs]], str]] = {
    "forward": judge_forward,
    "first derivatives": judge_first_derivatives,
    "second derivatives": judge_second_derivatives,
    "structure": judge_structure,
    "forward mode": judge_forward_mode,
    "vmap": judge_vmap,
}


def judge(check: str, exercise: str, probes: list[Probe], observations: list[Obs]) -> str:
    """Judge observations of ``check``; return a one-line summary or raise ``CheckFailed``.

    Observations may come from an untrusted process: anything malformed fails the check, never passes it.
    """
    ex = get(exercise)
    judgment = _Judge(ex, check)
    _complete(judgment, None, observations, len(probes), "observations", "probes")
    try:
        return JUDGES[check](judgment, probes, observations)
    except CheckFailed:
        raise
    except KeyError as missing:  # an observation without a fact the observer always records
        judgment.fail("observation_missing", key=dx._short(str(missing), 80))
    except Exception as exc:  # malformed observations, or a bug of ours: a precise message, never a pass
        judgment.fail("grader_error", error_type=type(exc).__name__, error=dx._short(str(exc)))


def warm_up() -> None:
    """Pay now what torch makes a process's first verdicts pay (the trusted process calls it in a thread while its
    sandboxed workers start; the first notebooks need not wait for it):

    * a VJP with a given vector (every first-derivative check's reference) imports torch's symbolic shapes and
      sympy, about 0.3-0.6 s;
    * the forward-mode checks' reference (``reference_jvp``: reverse mode twice, not dual tensors, whose first use
      compiled torch's forward-mode decompositions with TorchScript, 0.8 s) builds a double-backward graph.

    Never raises: whatever it could not do, the first verdicts do as before."""
    try:
        x = torch.linspace(0.5, 1.5, 3, dtype=torch.float64, requires_grad=True)
        torch.autograd.grad(torch.sin(x), x, torch.ones_like(x))
        reference_jvp(torch.sin, (x.detach(),), (torch.ones_like(x),))
    except Exception:
        pass
