"""The student's side of the function checks of notebooks 1 and 4: call the student's function on the probes and
record what happened as plain data (dicts, lists, strings, numbers, booleans, None and detached tensors).

Runs next to the student's code (in the sandbox's child, or in the student's kernel for a self-check) and decides
nothing: the returned value, the error raised, ``x``/``w`` and their ``.grad`` before and after the call, the
forward/backward order of the batches, whether the result aliases ``w.grad``; for notebook 4, how the probe
function was called (under which ``torch.func`` transforms, with a forward-mode tangent or not) and what PyTorch's
own recipe gives through the student's own Functions. Warnings raised inside the student's code are dropped
(nbgrader scores a cell that writes to stderr as failed). The judge is ``grader.judge.functions``; the registry,
probes and references are ``grader.spec.functions`` / ``grader.spec.function_probes``.
"""

from __future__ import annotations

import functools
import os
import sysconfig
import traceback
import types
import warnings
from typing import Any, Callable, Sequence

import torch
from torch.fx.experimental.proxy_tensor import get_proxy_mode  # (the function only: the guard leaves its module alone)

from grader.sandboxed import autograd_env, typed
from grader.spec.function_probes import _BatchProbe, _ElementwiseProbe, _HvpProbe, _PenaltyProbe, _VjpProbe, _leaf, grader_penalty
from grader.spec.messages import say
from grader.spec.functions import _MAX_ITEMS, Obs, _first_line, _text, _type_name, arguments, spec_of

MAX_CALLS = 50  # calls of a probe function recorded (an HVP calls f once or twice)


# ---------------------------------------------------------------------------------------------
# turning whatever the student's code did into plain data


def _plain(t: torch.Tensor) -> torch.Tensor:
    """A detached, dense, CPU copy of ``t`` as a plain ``torch.Tensor`` (no subclass, graph or attributes)."""
    with torch._C.DisableTorchFunctionSubclass():
        out = torch.Tensor.detach(t)  # torch's own function: a plain tensor, whatever methods t's class defines
        if out.layout != torch.strided:
            out = out.to_dense()
        out = out.to("cpu").resolve_conj().resolve_neg().clone()
        if type(out) is not torch.Tensor:
            out = out.as_subclass(torch.Tensor)
    return out


def _grad_record(t: torch.Tensor) -> torch.Tensor | None:
    with torch._C.DisableTorchFunctionSubclass():
        grad = torch.Tensor.grad.__get__(t)  # torch's own getter (no property of a subclass runs)
    return None if grad is None else _plain(grad)


_SKIP_DIRS = tuple(
    os.path.normcase(os.path.realpath(p)) + os.sep
    for p in (os.path.dirname(os.path.dirname(__file__)), os.path.dirname(torch.__file__), sysconfig.get_paths()["stdlib"])
)


def _student_line(exc: BaseException) -> str | None:
    """The last traceback line that is in the student's code (not grader, torch or stdlib), if any."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        path = os.path.normcase(os.path.realpath(frame.filename)) if os.path.exists(frame.filename) else frame.filename
        if path.startswith(_SKIP_DIRS):
            continue
        code = (frame.line or "").strip()
        return say("code_at_line", line=frame.lineno, code=code) if code else say("at_line_only", line=frame.lineno)
    return None


def _student_function(exc: BaseException) -> str:
    """The qualified name of the student's function that raised (its deepest frame outside grader, torch, stdlib)."""
    for frame, _ in reversed(list(traceback.walk_tb(exc.__traceback__))):
        path = frame.f_code.co_filename
        path = os.path.normcase(os.path.realpath(path)) if os.path.exists(path) else path
        if not path.startswith(_SKIP_DIRS):
            return str(getattr(frame.f_code, "co_qualname", frame.f_code.co_name))[:200]
    return ""


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
    if typed.is_tensor(result):  # exactly a torch.Tensor: a subclass is what it is (grader.sandboxed.typed)
        try:
            return {"kind": "tensor", "value": _plain(result)}
        except Exception:
            return {"kind": "unreadable", "type": _type_name(result)}
    return {"kind": "other", "type": typed.kind(result) if isinstance(result, torch.Tensor) else _type_name(result)}


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
# notebook 1: vjp, accumulate, secondderiv


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


# ---------------------------------------------------------------------------------------------
# notebook 4: hvp, penalty (probes built from the student's own Functions)


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
              len, bool, list.append, Exception, MAX_CALLS, get_proxy_mode)


def _recording(f: Callable[..., torch.Tensor], calls: list[Obs]) -> Callable[..., torch.Tensor]:
    """f, recording in ``calls`` how each call came: under which torch.func transforms (grad, jvp, vmap), with a
    forward-mode tangent (a dual tensor) or not, on an input autograd tracks or not.

    A tangent is pushed through f when the input is dual at the open forward-mode level, or when a forward-mode
    level is open while make_fx traces f (``torch.func.linearize`` traces the tangent's path once and replays it on
    v: the tensor f gets is then not itself dual)."""
    (stack, key, as_int, names, unpack_dual, forward_ad, tensor, is_instance, length, as_bool, append, error,
     limit, tracing) = _RECORDING

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
                    dual = unpack_dual(x, level=level)[1] is not None or tracing() is not None
                except error:
                    dual = False
            append(calls, {"transforms": transforms, "dual": dual,
                           "tracked": x is not None and as_bool(x.requires_grad)})
        return f(*args)

    return _opaque(probe_function)


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
            obs["own"] = _own_record(lambda: grader_penalty(p.make(ops), _leaf(p.w), p.x.clone()))
        return obs
    obs["result"] = _result_record(result)
    if p.uses:
        obs["own"] = _own_record(lambda: grader_penalty(p.make(ops), _leaf(p.w), p.x.clone()))
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


# ---------------------------------------------------------------------------------------------
# observe: one observer per check of the registry (grader.spec.functions.CHECKS)

#: How each check of ``grader.spec.functions.CHECKS`` observes one probe: (fn, probe, stale .grad or None[, namespace]).
OBSERVERS: dict[str, Callable[..., Obs]] = {
    "check_vjp": _observe_vjp,
    "check_vjp_keeps_grad": _observe_vjp,
    "check_mean_gradient": _run_accumulate,
    "check_mean_gradient_stale": _run_accumulate,
    "check_mean_gradient_copy": _run_accumulate,
    "check_second_derivative": _observe_second,
    "check_second_derivative_general": _observe_second,
    "check_hvp": _observe_hvp,
    "check_hvp_forward_over_reverse": _observe_hvp,
    "check_penalty_value": _observe_penalty,
    "check_penalty_gradient": _observe_penalty,
}


def observe(check: str, fn: Callable[..., Any], namespace: dict[str, Any] | None = None, **kwargs: Any) -> list[Obs]:
    """Student side: run ``fn`` on the probes of ``check`` and return plain-data observations, one per probe.

    ``kwargs`` are the public check's (``sizes``, ``seed``, ``n_batches``), with the same defaults; ``namespace``
    (the notebook's variables) is given to checks whose probes use the student's own Functions. Errors
    raised by ``fn`` are recorded, not raised; warnings are swallowed. Nothing here decides pass or fail.
    """
    spec = spec_of(check)
    observe_one = OBSERVERS[check]
    setups = spec.setup(arguments(check, spec, kwargs))
    observations: list[Obs] = []
    with warnings.catch_warnings(), autograd_env.clean():
        warnings.simplefilter("ignore")
        for i, (probe, stale) in enumerate(setups):
            try:
                obs = (observe_one(fn, probe, stale, namespace) if spec.uses_namespace
                       else observe_one(fn, probe, stale))
            except Exception as exc:  # e.g. a tensor the student's code made unreadable: judged as malformed
                obs = {"observer_error": f"{_type_name(exc)}: {_first_line(_text(exc))}"}
            observations.append({"check": check, "probe": i, **obs})
    return observations
