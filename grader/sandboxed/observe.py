"""The student side of every check: run the student's Function on probes and record what it did.

Observations are plain data (dicts, lists, strings, numbers, tensors): what forward returned, which
Function made it, what backward returned raw and through the engine, the second derivatives, what
sits on ctx. They contain no verdict. ``grader.checks`` judges them against PyTorch's references,
either in the same process (a student's self-check) or in the trusted grader, after the
observations crossed from the sandbox as JSON (``grader.boundary.wire``). Code here runs next to student
code, so it decides nothing.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Sequence

import torch
from torch.autograd.gradcheck import GradcheckError

from grader.sandboxed import evidence as dx
from grader.sandboxed import autograd_env, typed
from grader.spec.exercises import Exercise, Probe
from grader.spec.messages import say
from grader.spec.registry import GRADCHECKED, gradchecked  # noqa: F401 (observe.gradchecked: the judge asks the same)
from grader.spec.vectors import (  # noqa: F401 (the probe's vectors, also read as observe.<name>)
    BATCH, batched, grad_output, requires_grad_patterns, second_vectors, tangents,
)

Obs = dict[str, Any]


def error_info(exc: BaseException, stage: str) -> Obs:
    mistake, fields = dx.from_exception(exc, stage=stage)
    function = ""
    if mistake == "not_implemented":
        function = raising_function(exc)
    return {"mistake": mistake, "fields": {k: str(v) for k, v in fields.items()}, "code": dx.student_line(exc),
            "function": function, "type": type(exc).__name__, "message": dx._short(str(exc))}


def raising_function(exc: BaseException) -> str:
    import traceback

    for frame, _ in reversed(list(traceback.walk_tb(exc.__traceback__))):
        if not frame.f_code.co_filename.startswith((dx.GRADER_DIR, dx.TORCH_DIR)):
            return getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
    return ""


def custom_nodes(tensor: torch.Tensor, limit: int = 200) -> list[Any]:
    """Graph nodes created by custom autograd.Functions outside torch, breadth first from ``tensor.grad_fn``."""
    found, queue, seen = [], [tensor.grad_fn], 0
    while queue and seen < limit:
        node = queue.pop(0)
        seen += 1
        if node is None:
            continue
        cls = getattr(type(node), "_forward_cls", None)
        if cls is not None and not cls.__module__.startswith("torch"):
            found.append(node)
        queue.extend(next_node for next_node, _ in node.next_functions)
    return found


def find_node(tensor: torch.Tensor, class_names: Sequence[str], strict: bool = False) -> Any:
    """The node of the Function named in ``class_names``; else (unless ``strict``) the first custom Function's
    node (a variant may be named differently, as the notebook's SinhBad); None if there is none."""
    if tensor.grad_fn is None:
        return None
    nodes = custom_nodes(tensor)
    named = [n for n in nodes if type(n)._forward_cls.__name__ in class_names]
    return (named or ([] if strict else nodes) or [None])[0]


def _is_custom(node: Any) -> bool:
    cls = getattr(type(node), "_forward_cls", None)
    return cls is not None and not cls.__module__.startswith("torch")


def _node_name(node: Any) -> str:
    return node_class(node).__name__ if _is_custom(node) else type(node).__name__


def direct_node(out: torch.Tensor, inputs: tuple[Any, ...]) -> tuple[Any, Obs]:
    """The custom Function node that made ``out`` straight from ``inputs``, or (None, what lies between).

    The derivative checks score what that Function's own ``backward`` returns. A result that went through any other
    node (PyTorch's own op, another Function) between the inputs and the output gets derivatives autograd computed
    for that node: ``_Pass.apply(x * x)`` would be scored on ``x * x``'s derivative, and ``Square.apply(x) * 1`` on
    more than the student's code. So: ``out.grad_fn`` is a custom Function's node, and each of its inputs is one of
    the probe's tensors (an ``AccumulateGrad`` of that leaf) or needs no gradient."""
    node = out.grad_fn
    if node is None:
        return None, {}
    if not _is_custom(node):
        deeper = custom_nodes(out)
        return None, ({"after": type(node).__name__, "cls": node_class(deeper[0]).__name__} if deeper else {})
    leaves = {id(x) for x in inputs if typed.is_tensor(x) and x.requires_grad}
    for next_node, _ in node.next_functions:
        if next_node is None:
            continue
        if type(next_node).__name__ == "AccumulateGrad" and id(getattr(next_node, "variable", None)) in leaves:
            continue
        return None, {"before": _node_name(next_node), "cls": node_class(node).__name__}
    return node, {}


def node_class(node: Any) -> type:
    return type(node)._forward_cls


def detached(value: Any) -> Any:
    """An exact tensor's detached copy, made by torch's own functions; anything else as it is (see ``_grads``)."""
    return typed.copy(value) if typed.is_tensor(value) else value


def _grads(values: Sequence[Any]) -> list[Any]:
    """Gradients as data: exact tensors (detached), None, or what else was returned ({'other': its kind}), a tensor
    subclass included (``grader.sandboxed.typed``)."""
    return [typed.plain(g) for g in values]


# --- one call of the student's function --------------------------------------------------------------


def call(ex: Exercise, fn: Callable[..., Any], inputs: tuple[Any, ...]) -> tuple[Obs, torch.Tensor | None, Any]:
    """Call fn; return (observation, output tensor or None, custom Function node or None).

    Saved-tensor hooks count what forward saved with save_for_backward (ctx attributes bypass them). With every
    tensor input requiring grad, it also records what backward could read from ctx that has no history."""
    saved: list[bool] = []  # one per tensor given to save_for_backward: whether it had a history then

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        saved.append(typed.requires_grad(tensor))
        return tensor

    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor), autograd_env.ENGINE.driving():
            out = fn(*inputs)
    except Exception as exc:
        return {"error": error_info(exc, say("stage_running_forward"))}, None, None
    extra: Obs = {}
    if len(ex.outputs) > 1:  # e.g. (values, indices): the first is the one derivatives are checked on
        if not (isinstance(out, (tuple, list)) and len(out) == len(ex.outputs)
                and all(isinstance(o, torch.Tensor) for o in out)):
            return {"type": type(out).__name__, "name": getattr(fn, "__name__", "your function"),
                    "count": len(out) if isinstance(out, (tuple, list)) else 1}, None, None
        if not all(typed.is_tensor(o) for o in out):
            return _not_plain(fn, next(o for o in out if not typed.is_tensor(o))), None, None
        extra = {"outputs": [detached(o) for o in out], "requires_grad": [bool(o.requires_grad) for o in out],
                 "made_by_function": [o.grad_fn is not None and find_node(o, ex.classes, strict=True) is not None
                                      for o in out]}
        out = out[0]
    if not typed.is_tensor(out):
        return _not_plain(fn, out), None, None
    obs: Obs = {"type": "Tensor", "value": detached(out), "has_graph": out.grad_fn is not None, **extra}
    node, between = direct_node(out, inputs)
    obs["node"] = node_class(node).__name__ if node is not None else None
    obs["found"] = type(out.grad_fn).__name__ if out.grad_fn is not None else None
    if between:
        obs["between"] = between
    if node is not None:
        obs["ctx_attrs"] = dx.tensor_attributes(node)
        obs["saved"] = len(saved)
        if all(x.requires_grad for x in inputs if isinstance(x, torch.Tensor)):  # else "no history" means nothing
            obs["without_history"] = dx.tensors_without_history(node, saved)
    return obs, out, node


def _not_plain(fn: Callable[..., Any], value: Any) -> Obs:
    """What a call returned that is not a plain tensor (or a tuple of them): its type, marked if a tensor subclass."""
    obs: Obs = {"type": type(value).__name__, "name": getattr(fn, "__name__", "your function")}
    if isinstance(value, torch.Tensor):
        obs["subclass"] = typed.kind(value)
    return obs


def _usable(obs: Obs) -> bool:
    return "error" not in obs and obs.get("type") == "Tensor" and obs.get("has_graph") and obs.get("node") is not None


def _begin(ex: Exercise, fn: Callable[..., Any], inputs: tuple[Any, ...],
           **first: Any) -> tuple[Obs, torch.Tensor | None, Any]:
    """Call forward; the observation starts with it. The output is None when nothing more can be observed
    (forward raised, returned no tensor, or no custom Function made it)."""
    obs, out, node = call(ex, fn, inputs)
    return {**first, "forward": obs}, (out if _usable(obs) else None), node


def _differentiable(inputs: tuple[Any, ...]) -> list[torch.Tensor]:
    return [x for x in inputs if isinstance(x, torch.Tensor) and x.requires_grad]


def _tensor_closure(fn: Callable[..., Any], inputs: tuple[Any, ...]) -> Callable[..., torch.Tensor]:
    positions = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.requires_grad]

    def closure(*tensors: torch.Tensor) -> torch.Tensor:
        args = list(inputs)
        for i, t in zip(positions, tensors):
            args[i] = t
        with autograd_env.ENGINE.driving():
            return fn(*args)

    return closure


def output_zeros(node: Any) -> list[Any] | None:
    """A zero gradient for every output of the Function that made ``node`` (None if torch does not say)."""
    try:
        return [torch.zeros(tuple(m.shape), dtype=m.dtype, device=m.device) for m in node._input_metadata]
    except Exception:
        return None


def raw_backward(probe: Probe, out: torch.Tensor, node: Any, v: torch.Tensor) -> Obs:
    """Call the student's backward directly, before the engine sums or casts what it returns."""
    cls = node_class(node)
    grads = output_zeros(node)  # one per output, from the Function's own node: its apply may be wrapped
    if grads is None:
        try:
            with autograd_env.ENGINE.driving():
                outputs = cls.apply(*probe.fresh())  # to learn how many outputs the Function has
        except Exception as exc:
            return {"error": error_info(exc, say("stage_running_forward"))}
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        grads = [torch.zeros_like(o) if isinstance(o, torch.Tensor) else None for o in outputs]
    grads[out.output_nr if out.grad_fn is node else 0] = v
    try:
        with torch.no_grad(), autograd_env.ENGINE.driving():
            raw = type(node).apply(node, *grads)  # the student's backward, through torch's (guarded) entry point
    except Exception as exc:
        return {"error": error_info(exc, say("stage_calling_backward", cls=cls.__name__))}
    raw = raw if isinstance(raw, tuple) else (raw,)
    return {"cls": cls.__name__, "grads": _grads(raw)}


def run_gradcheck(fn: Callable[..., Any], inputs: tuple[Any, ...], second: bool) -> Obs:
    check = torch.autograd.gradgradcheck if second else torch.autograd.gradcheck
    tensors = tuple(_differentiable(inputs))
    if any(t.dtype != torch.float64 for t in tensors):  # finite differences need float64: the judge skips these
        return {"ok": True, "skipped": "not float64"}
    try:
        # Fast mode compares one random projection of each Jacobian: milliseconds whatever the size (slow mode,
        # every entry, took 25-50 ms a probe for Linear's). It catches the same mistakes (the catalogue's verdicts
        # are unchanged), and on a mismatch PyTorch recomputes in slow mode for its message, which reads the same.
        # Its random vectors come from torch's global generator: put back, so that a notebook's later cells draw
        # the same numbers whether hidden tests ran before them or not.
        with torch.random.fork_rng(devices=[]):
            check(_tensor_closure(fn, inputs), tensors, raise_exception=True, fast_mode=True)
    except GradcheckError as err:
        return {"ok": False, "detail": dx._short(str(err), 200).rstrip(",") + "."}
    except Exception as exc:
        stage = say("stage_running_gradgradcheck" if second else "stage_running_gradcheck")
        return {"ok": False, "error": error_info(exc, stage)}
    return {"ok": True}


# --- the four checks -------------------------------------------------------------------------------


def forward(ex: Exercise, fn: Callable[..., Any], probe: Probe) -> Obs:
    return {"forward": call(ex, fn, probe.fresh())[0]}


def first_derivatives(ex: Exercise, fn: Callable[..., Any], probe: Probe, gradcheck: bool = True) -> Obs:
    inputs = probe.fresh()
    result, out, node = _begin(ex, fn, inputs)
    if out is None:
        return result
    v = grad_output(out.shape, probe.seed, probe.dtype)
    result["raw"] = raw_backward(probe, out, node, v)
    if "error" in result["raw"]:
        return result
    try:
        result["vjp"] = {"grads": _grads(torch.autograd.grad(out, _differentiable(inputs), v, allow_unused=True))}
    except Exception as exc:
        result["vjp"] = {"error": error_info(exc, say("stage_running_backward"))}
        return result
    if gradcheck:
        result["gradcheck"] = run_gradcheck(fn, probe.fresh(), second=False)
    return result


def _sinh_extra_outputs_ignored(cls: type, probe: Probe) -> bool:
    """Sinh's backward must add the gradients of its extra outputs exp(x), exp(-x)."""
    try:
        (x,) = probe.fresh()
        with autograd_env.ENGINE.driving():
            outputs = cls.apply(x)
        if not isinstance(outputs, tuple) or len(outputs) < 2:
            return False
        (g,) = torch.autograd.grad(outputs[1], x, torch.ones_like(outputs[1]), allow_unused=True)
    except Exception:
        return False
    return g is None or (typed.is_tensor(g) and bool(torch.all(g == 0)))


def second_derivatives(ex: Exercise, fn: Callable[..., Any], probe: Probe, gradcheck: bool = True) -> Obs:
    inputs = probe.fresh()
    result, out, node = _begin(ex, fn, inputs)
    if out is None:
        return result
    cls = node_class(node)
    result["backward_source"] = dx.source_of(cls.backward)
    # torch's decorator wraps backward (functools.wraps copies the name, not the code's): no graph, silently
    code = getattr(cls.backward, "__code__", None)
    result["once_differentiable"] = "once_differentiable" in str(getattr(code, "co_qualname", ""))
    v = grad_output(out.shape, probe.seed, probe.dtype).requires_grad_()
    diff = _differentiable(inputs)
    try:
        grads = torch.autograd.grad(out, diff, v, create_graph=True, allow_unused=True)
    except Exception as exc:
        result["first"] = {"error": error_info(exc, say("stage_backward_create_graph"))}
        return result
    first: Obs = {"grads": _grads(grads), "tracked": [typed.requires_grad(g) for g in grads]}
    grads = tuple(g if typed.is_tensor(g) else None for g in grads)  # what is not a plain tensor is judged from "grads"
    if ex.backward_classes:
        backward_nodes = [find_node(g, ex.backward_classes, strict=True) if g is not None else None for g in grads]
        first["backward_node"] = [node_class(n).__name__ if n is not None else None for n in backward_nodes]
        first["backward_node_sources"] = [dx.source_of(node_class(n).backward) if n is not None else "" for n in backward_nodes]
        first["backward_node_without_history"] = [dx.tensors_without_history(n) if n is not None else []
                                                  for n in backward_nodes]
    result["first"] = first
    u = second_vectors([x.shape for x in diff], probe.seed, probe.dtype)  # a gradient has its input's shape
    tracked = [(g, uk) for g, uk in zip(grads, u) if g is not None and g.requires_grad]
    targets = [*diff, v]
    try:
        second = (torch.autograd.grad([g for g, _ in tracked], targets, [uk for _, uk in tracked], allow_unused=True)
                  if tracked else [None] * len(targets))
    except Exception as exc:
        result["second"] = {"error": error_info(exc, say("stage_double_backward"))}
        return result
    result["second"] = {"grads": _grads(second)}
    if ex.id == "sinh":
        result["sinh_extra_outputs_ignored"] = _sinh_extra_outputs_ignored(cls, probe)
    if gradcheck:
        result["gradgradcheck"] = run_gradcheck(fn, probe.fresh(), second=True)
    return result


def _pattern_observation(ex: Exercise, fn: Callable[..., Any], probe: Probe, pattern: tuple[int, ...]) -> Obs:
    inputs = tuple(x.detach().clone().requires_grad_(i in pattern) if isinstance(x, torch.Tensor) else x
                   for i, x in enumerate(probe.inputs))
    result, out, node = _begin(ex, fn, inputs, pattern=list(pattern))
    if out is None:
        return result
    v = grad_output(out.shape, probe.seed, probe.dtype)
    try:
        grads = torch.autograd.grad(out, _differentiable(inputs), v, allow_unused=True, retain_graph=True)
    except Exception as exc:
        result["vjp"] = {"error": error_info(exc, say("stage_some_inputs_require_grad"))}
        return result
    result["vjp"] = {"grads": _grads(grads)}
    cls = node_class(node)
    try:
        with torch.no_grad(), autograd_env.ENGINE.driving():
            raw = type(node).apply(node, *_one_hot(node, out, v))  # the student's backward via torch's guarded entry; graph retained
    except Exception as exc:
        result["raw"] = {"error": error_info(exc, say("stage_calling_backward", cls=cls.__name__))}
        return result
    raw = raw if isinstance(raw, tuple) else (raw,)
    result["raw"] = {"cls": cls.__name__, "grads": _grads(raw)}
    return result


def _one_hot(node: Any, out: torch.Tensor, v: torch.Tensor) -> list[Any]:
    """backward's arguments: ``v`` for ``out``, zeros for the Function's other outputs."""
    grads = output_zeros(node) or [None]
    grads[out.output_nr if out.grad_fn is node and out.output_nr < len(grads) else 0] = v
    return grads


def structure(ex: Exercise, fn: Callable[..., Any], probe: Probe) -> Obs:
    inputs = probe.fresh()
    result, out, node = _begin(ex, fn, inputs)
    if out is None:
        return result
    result["style"] = style(node_class(node))
    v = grad_output(out.shape, probe.seed, probe.dtype)
    result["raw"] = raw_backward(probe, out, node, v)
    if ex.backward_classes and "error" not in result["raw"]:
        try:
            grads = torch.autograd.grad(out, _differentiable(inputs), v.requires_grad_(), create_graph=True)
            nodes = [find_node(g, ex.backward_classes, strict=True) for g in grads]
            result["backward_nodes"] = [
                {"cls": node_class(n).__name__, "ctx_attrs": dx.tensor_attributes(n)} if n is not None else None
                for n in nodes]
        except Exception as exc:
            result["backward_nodes"] = {"error": error_info(exc, say("stage_backward_create_graph"))}
    if len(ex.input_names) > 1:
        result["patterns"] = [_pattern_observation(ex, fn, probe, p) for p in requires_grad_patterns(probe)]
    return result


def _first(out: Any) -> Any:
    return out[0] if isinstance(out, (tuple, list)) and out else out


def _tensor_or_kind(value: Any) -> Any:
    """A result as data: a detached exact tensor, or what else it was ({'other': its kind})."""
    return typed.plain(value) if value is not None else {"other": "NoneType"}


def forward_mode(ex: Exercise, fn: Callable[..., Any], probe: Probe) -> Obs:
    """The Function's jvp through torch.func.jvp and through forward_ad dual tensors (unary Functions)."""
    from torch.autograd import forward_ad

    result, out, _ = _begin(ex, fn, probe.fresh())
    if out is None:
        return result
    primals = tuple(x.detach() for x in probe.inputs if isinstance(x, torch.Tensor))
    directions = tuple(tangents(probe))
    driven = _driven(fn)
    try:
        _, jvp_out = torch.func.jvp(lambda *xs: _first(driven(*xs)), primals, directions)
        result["func_jvp"] = {"value": _tensor_or_kind(jvp_out)}
    except Exception as exc:
        result["func_jvp"] = {"error": error_info(exc, say("stage_func_jvp"))}
    try:
        with forward_ad.dual_level():
            duals = [forward_ad.make_dual(x, t) for x, t in zip(primals, directions)]
            y = _first(driven(*duals))
            tangent = forward_ad.unpack_dual(y).tangent if typed.is_tensor(y) else None
            result["dual"] = {"tangent": typed.plain(tangent)}
    except Exception as exc:
        result["dual"] = {"error": error_info(exc, say("stage_dual_tensors"))}
    return result


def vmap(ex: Exercise, fn: Callable[..., Any], probe: Probe) -> Obs:
    """torch.func.vmap of the Function, the same as a loop, and per-sample gradients vmap(grad(sum of fn))."""
    result, out, _ = _begin(ex, fn, probe.fresh())
    if out is None:
        return result
    stacked = batched(probe)
    fn = _driven(fn)
    try:
        result["vmap"] = {"value": _tensor_or_kind(_first(torch.func.vmap(fn)(*stacked)))}
    except Exception as exc:
        result["vmap"] = {"error": error_info(exc, say("stage_vmap"))}
    try:
        rows = [_first(fn(*(x[i] for x in stacked))) for i in range(BATCH)]
        result["loop"] = {"value": detached(torch.stack(rows))}
    except Exception as exc:
        result["loop"] = {"error": error_info(exc, say("stage_one_sample_at_a_time"))}
    try:
        per_sample = torch.func.vmap(torch.func.grad(lambda *xs: _first(fn(*xs)).sum()))(*stacked)
        result["vmap_grad"] = {"value": _tensor_or_kind(per_sample)}
    except Exception as exc:
        result["vmap_grad"] = {"error": error_info(exc, say("stage_vmap_grad"))}
    return result


def _driven(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` called as student code (``autograd_env``: differentiation it starts is recorded)."""
    def driven(*args: Any) -> Any:
        with autograd_env.ENGINE.driving():
            return fn(*args)

    return driven


def style(cls: type) -> Obs:
    """How the Function is written: setup_context style (forward without ctx) or the classic one."""
    from torch.autograd.function import _is_setup_context_defined

    try:
        with_setup_context = bool(_is_setup_context_defined(cls.setup_context))
    except Exception:
        with_setup_context = False
    return {"setup_context": with_setup_context}


OBSERVERS: dict[str, Callable[[Exercise, Callable[..., Any], Probe], Obs]] = {
    "forward": forward,
    "first derivatives": first_derivatives,
    "second derivatives": second_derivatives,
    "structure": structure,
    "forward mode": forward_mode,
    "vmap": vmap,
}


def observe(check: str, ex: Exercise, fn: Callable[..., Any], probes: list[Probe]) -> list[Obs]:
    """Observations for every probe; warnings are swallowed (stderr must never cost points)."""
    with warnings.catch_warnings(), autograd_env.clean():
        warnings.simplefilter("ignore")
        observer = OBSERVERS[check]
        observations = []
        for k, probe in enumerate(probes):
            autograd_env.ENGINE.reset()
            obs = (observer(ex, fn, probe, gradcheck=gradchecked(check, k)) if check in GRADCHECKED
                   else observer(ex, fn, probe))
            # PyTorch's differentiation started by the student's code (its forward, backward or jvp) on this probe
            obs["autograd_by_student"] = autograd_env.ENGINE.started_inside()
            observations.append(obs)
        return observations
