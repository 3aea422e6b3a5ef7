"""The checks that test cells call: one call per check, each raising ``CheckFailed`` with a diagnosis.

Every check runs the student's Function on small float64 probes and compares
with PyTorch's own ops on the same probes, then confirms with
``torch.autograd.gradcheck`` / ``gradgradcheck``. It also covers what those two
miss: a result that does not come from the student's Function, a second
derivative lost because tensors live on ``ctx``, an unsummed bias gradient the
engine sums silently, float32 gradients, and ``ctx.needs_input_grad`` misuse.

    from grader import checks
    checks.forward("square", Square.apply, shapes=[(3, 3)])
    checks.first_derivatives("square", Square.apply, shapes=[(3, 3)])
    checks.second_derivatives("square", Square.apply, shapes=[(3, 3)])
    checks.structure("square", Square.apply)
"""

from __future__ import annotations

import functools
import itertools
import traceback
import warnings
from typing import Any, Callable, NoReturn, Sequence

import torch
from torch.autograd.gradcheck import GradcheckError

from . import diagnosis as dx
from .diagnosis import CheckFailed, Finding
from .exercises import Exercise, Probe, Shape, _values, get

Function = Callable[..., Any]


class _Check:
    """One check of one exercise: builds the findings it may raise."""

    def __init__(self, ex: Exercise, name: str):
        self.ex, self.name = ex, name

    def fail(self, mistake: str, probe: Probe | None = None, **fields: Any) -> NoReturn:
        where = fields.pop("where", "")
        expected = fields.pop("expected", None)
        received = fields.pop("received", None)
        code = fields.pop("code", "")
        fields.setdefault("formula", self.ex.formula)
        fields.setdefault("classes", " / ".join(self.ex.classes))
        raise CheckFailed(
            Finding(
                exercise=self.ex.id,
                check=self.name,
                mistake=mistake,
                probe=probe.describe() if probe else "",
                where=where,
                expected=expected,
                received=received,
                section=self.ex.section(self.name, mistake),
                fields=fields,
                code=code,
            )
        )

    def fail_from_exception(self, exc: BaseException, probe: Probe | None, stage: str, **fields: Any) -> NoReturn:
        mistake, found = dx.from_exception(exc, stage=stage)
        found.update(fields)
        if mistake == "not_implemented":
            found["function"] = _raising_function(exc) or self.ex.title
        if mistake == "wrong_gradient_shape" and probe is not None:
            mistake, found = _explain_shape_error(found, probe)
        if mistake == "gradient_for_non_tensor" and probe is not None:
            position = int(found.get("position", 1)) - 1  # the engine counts from 1 here
            if 0 <= position < len(probe.names):
                found.update(name=probe.names[position], value=repr(probe.inputs[position]))
        found.setdefault("cls", self.ex.title)
        found.setdefault("names", ", ".join(self.ex.input_names))
        self.fail(mistake, probe, code=dx.student_line(exc), **found)


def _raising_function(exc: BaseException) -> str:
    for frame, _ in reversed(list(traceback.walk_tb(exc.__traceback__))):
        name = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
        if not frame.f_code.co_filename.startswith((dx.GRADER_DIR, dx.TORCH_DIR)):
            return name
    return ""


def _explain_shape_error(found: dict[str, Any], probe: Probe) -> tuple[str, dict[str, Any]]:
    """Turn the engine's 'invalid gradient at index i - got [..] but expected [..]' into a named mistake."""
    index = int(found.get("index", 0))
    got = tuple(int(s) for s in str(found.get("got", "")).split(",") if s.strip())
    want = tuple(int(s) for s in str(found.get("want", "")).split(",") if s.strip())
    name = probe.names[index] if index < len(probe.names) else f"input {index}"
    fields = {"name": name, "received_shape": got, "expected_shape": want}
    shapes = {n: tuple(x.shape) for n, x in zip(probe.names, probe.inputs) if isinstance(x, torch.Tensor)}
    others = [n for n, s in shapes.items() if s == got and n != name]
    if others:
        return "gradients_in_wrong_order", {**fields, "other": others[0]}
    if len(got) == 2 and got == want[::-1]:
        return "transposed_gradient", fields
    return "wrong_gradient_shape", fields


def _guard(check: str) -> Callable[[Function], Function]:
    """Turn an unexpected exception inside a check into a precise message, never a grader traceback."""

    def decorate(body: Function) -> Function:
        @functools.wraps(body)
        def run(exercise: str, fn: Function, shapes: Sequence[Shape] | None = None, seed: int = 0) -> None:
            ex = get(exercise)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # stderr costs points in nbgrader; warnings never decide
                    summary, count = body(_Check(ex, check), fn, ex.probes(shapes or ex.default_shapes, seed))
            except CheckFailed:
                raise
            except Exception as exc:  # an error outside the guarded calls to student code
                chk = _Check(ex, check)
                if dx.student_line(exc):
                    chk.fail_from_exception(exc, None, stage=f"checking {check}")
                chk.fail("grader_error", error_type=type(exc).__name__, error=dx._short(str(exc)))
            print(f"✓ {ex.id} · {check}: {summary} on {count} probe{'s' if count != 1 else ''}")

        return run

    return decorate


# --- running the student's Function --------------------------------------------------------------


def _custom_nodes(tensor: torch.Tensor, limit: int = 200) -> list[Any]:
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


def _find_node(tensor: torch.Tensor, class_names: Sequence[str], strict: bool = False) -> Any:
    """The node of the Function named in ``class_names``; else (unless ``strict``) the first custom Function's
    node (a variant may be named differently, as the notebook's SinhBad); None if there is none."""
    nodes = _custom_nodes(tensor)
    named = [n for n in nodes if type(n)._forward_cls.__name__ in class_names]
    return (named or ([] if strict else nodes) or [None])[0]


def _run_forward(chk: _Check, fn: Function, probe: Probe, inputs: tuple[Any, ...]) -> tuple[torch.Tensor, Any]:
    """Call the student's function; return (output, the node of their custom Function)."""
    try:
        out = fn(*inputs)
    except Exception as exc:
        chk.fail_from_exception(exc, probe, stage="running forward")
    if not isinstance(out, torch.Tensor):  # e.g. a wrapper returning all of Sinh's outputs
        chk.fail("returns_tuple", probe, name=getattr(fn, "__name__", "your function"), type=type(out).__name__)
    if out.grad_fn is None:
        chk.fail("no_graph", probe)
    node = _find_node(out, chk.ex.classes)
    if node is None:
        found = type(out.grad_fn).__name__
        chk.fail("not_custom_function", probe, found=f"{found} (an op of PyTorch's own)" if found[-1].isdigit() else found)
    return out, node


def _check_forward_values(chk: _Check, probe: Probe, out: torch.Tensor, inputs: tuple[Any, ...]) -> bool:
    expected = chk.ex.reference(*(x.detach() if isinstance(x, torch.Tensor) else x for x in inputs))
    return out.shape == expected.shape and out.dtype == expected.dtype and dx.close(out, expected)


def _grad_output(out: torch.Tensor, seed: int) -> torch.Tensor:
    return _values(tuple(out.shape), seed + 7)


def _differentiable(probe: Probe, inputs: tuple[Any, ...]) -> list[tuple[int, str, torch.Tensor]]:
    return [
        (i, name, x)
        for i, (name, x) in enumerate(zip(probe.names, inputs))
        if isinstance(x, torch.Tensor) and x.requires_grad
    ]


def _tensor_closure(fn: Function, inputs: tuple[Any, ...]) -> Callable[..., torch.Tensor]:
    """fn as a function of its differentiable tensors only (gradcheck perturbs those)."""
    positions = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.requires_grad]

    def call(*tensors: torch.Tensor) -> torch.Tensor:
        args = list(inputs)
        for i, t in zip(positions, tensors):
            args[i] = t
        return fn(*args)

    return call


# --- forward -------------------------------------------------------------------------------------


@_guard("forward")
def forward(chk: _Check, fn: Function, probes: list[Probe]) -> tuple[str, int]:
    """The Function's output equals PyTorch's on every probe, and comes from the student's Function."""
    ex = chk.ex
    for probe in probes:
        inputs = probe.fresh()
        out, _ = _run_forward(chk, fn, probe, inputs)
        plain = tuple(x.detach() if isinstance(x, torch.Tensor) else x for x in inputs)
        expected = ex.reference(*plain)
        if out.shape != expected.shape:
            chk.fail("forward_wrong_shape", probe, received_shape=tuple(out.shape), expected_shape=tuple(expected.shape))
        if out.dtype != expected.dtype:
            chk.fail("forward_wrong_dtype", probe, received_dtype=out.dtype, expected_dtype=expected.dtype)
        if not dx.close(out, expected):
            where, e, r = dx.worst_element(expected, out.detach())
            mistake = "forward_wrong"
            if ex.id == "linear" and plain[2] is not None and dx.close(out, ex.reference(plain[0], plain[1], None)):
                mistake = "forward_missing_bias"
            chk.fail(mistake, probe, where=f"output{where}", expected=e, received=r)
    return f"{ex.formula} matches PyTorch", len(probes)


# --- first derivatives ---------------------------------------------------------------------------


def _check_raw_backward(chk: _Check, probe: Probe, inputs: tuple[Any, ...], out: torch.Tensor, node: Any,
                        grad_output: torch.Tensor, values: bool = True) -> None:
    """Call the student's backward directly: count and None for non-tensors, then (``values``) shapes and
    dtypes, before the engine silently sums or casts them."""
    cls = type(node)._forward_cls
    try:
        outputs = cls.apply(*probe.fresh())
    except Exception as exc:
        chk.fail_from_exception(exc, probe, stage="running forward")
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    grads = [torch.zeros_like(o) if isinstance(o, torch.Tensor) else None for o in outputs]
    grads[out.output_nr if out.grad_fn is node else 0] = grad_output
    try:
        with torch.no_grad():
            raw = cls.backward(node, *grads)
    except Exception as exc:
        chk.fail_from_exception(exc, probe, stage=f"calling {cls.__name__}.backward")
    raw = raw if isinstance(raw, tuple) else (raw,)
    names = ", ".join(probe.names)
    if len(raw) != len(inputs):
        chk.fail("wrong_number_of_gradients", probe, cls=cls.__name__, n_received=len(raw), n_expected=len(inputs),
                 names=names)
    for name, x, g in zip(probe.names, inputs, raw):
        if not isinstance(x, torch.Tensor):
            if g is not None:
                chk.fail("gradient_for_non_tensor", probe, cls=cls.__name__, name=name, value=repr(x), where=f"gradient for `{name}`")
            continue
        if g is None:
            if x.requires_grad:
                chk.fail("missing_gradient", probe, cls=cls.__name__, name=name)
            continue
        if not values:
            continue
        if not isinstance(g, torch.Tensor):
            chk.fail("raised_error", probe, error_type="TypeError", stage=f"calling {cls.__name__}.backward",
                     error=f"the gradient for `{name}` is a {type(g).__name__}, not a tensor")
        fields = {"name": name, "received_shape": tuple(g.shape), "expected_shape": tuple(x.shape), "cls": cls.__name__, "names": names}
        if g.shape != x.shape:
            others = [n for n, o in zip(probe.names, inputs) if isinstance(o, torch.Tensor) and n != name and o.shape == g.shape]
            if others:
                chk.fail("gradients_in_wrong_order", probe, other=others[0], **fields)
            if g.dim() == 2 and tuple(g.shape) == tuple(x.shape)[::-1]:
                chk.fail("transposed_gradient", probe, **fields)
            try:
                torch.broadcast_shapes(g.shape, x.shape)
                reducible = torch.broadcast_shapes(g.shape, x.shape) == g.shape
            except RuntimeError:
                reducible = False
            chk.fail("gradient_not_reduced" if reducible else "wrong_gradient_shape", probe, **fields)
        if g.dtype != x.dtype:
            chk.fail("gradient_dtype", probe, name=name, received_dtype=g.dtype, expected_dtype=x.dtype)


def _compare_gradients(chk: _Check, probe: Probe, names: list[str], expected: Sequence[torch.Tensor],
                       received: Sequence[torch.Tensor | None], unit: Sequence[torch.Tensor] | None, cls: str) -> None:
    for j, (name, e, r) in enumerate(zip(names, expected, received)):
        if r is None:
            chk.fail("missing_gradient", probe, cls=cls, name=name)
        if dx.close(r, e):
            continue
        others = [names[k] for k, ek in enumerate(expected) if k != j and dx.close(r, ek)]
        if others:
            chk.fail("gradients_in_wrong_order", probe, cls=cls, name=name, other=others[0], names=", ".join(probe.names))
        mistake, fields = dx.relate(e, r, without_grad_output=unit[j] if unit else None)
        where, ev, rv = dx.worst_element(e, r.detach())
        chk.fail(mistake or "wrong_gradient", probe, name=name, where=f"gradient for `{name}` at {where}",
                 expected=ev, received=rv, **fields)


def _run_gradcheck(chk: _Check, probe: Probe, fn: Function, inputs: tuple[Any, ...], second: bool) -> None:
    check = torch.autograd.gradgradcheck if second else torch.autograd.gradcheck
    tensors = tuple(x for _, _, x in _differentiable(probe, inputs))
    mistake = "gradgradcheck_failed" if second else "gradcheck_failed"
    try:
        check(_tensor_closure(fn, inputs), tensors, raise_exception=True)
    except GradcheckError as err:
        chk.fail(mistake, probe, detail=dx._short(str(err), 200).rstrip(",") + ".")
    except Exception as exc:
        chk.fail_from_exception(exc, probe, stage="running gradgradcheck" if second else "running gradcheck")


@_guard("first derivatives")
def first_derivatives(chk: _Check, fn: Function, probes: list[Probe]) -> tuple[str, int]:
    """backward returns one correctly shaped float64 gradient per input, equal to PyTorch's (vector-Jacobian
    products with a random grad_output), and gradcheck passes."""
    ex = chk.ex
    for probe in probes:
        inputs = probe.fresh()
        out, node = _run_forward(chk, fn, probe, inputs)
        if not _check_forward_values(chk, probe, out, inputs):
            chk.fail("forward_wrong_before_derivatives", probe)
        v = _grad_output(out, probe.seed)
        _check_raw_backward(chk, probe, inputs, out, node, v)
        diff = _differentiable(probe, inputs)
        try:
            received = torch.autograd.grad(out, [x for _, _, x in diff], v, allow_unused=True)
        except Exception as exc:
            chk.fail_from_exception(exc, probe, stage="running your backward")
        ref_inputs = probe.fresh()
        ref_diff = [x for _, _, x in _differentiable(probe, ref_inputs)]
        ref_out = ex.reference(*ref_inputs)
        expected = torch.autograd.grad(ref_out, ref_diff, v, retain_graph=True)
        unit = torch.autograd.grad(ref_out, ref_diff, torch.ones_like(v))
        _compare_gradients(chk, probe, [n for _, n, _ in diff], expected, received, unit, type(node)._forward_cls.__name__)
        _run_gradcheck(chk, probe, fn, probe.fresh(), second=False)
    return "gradients match PyTorch's and gradcheck passes", len(probes)


# --- second derivatives --------------------------------------------------------------------------


def _sinh_extra_outputs_ignored(cls: type, probe: Probe) -> bool:
    """Sinh's backward must add the gradients of its extra outputs exp(x), exp(-x)."""
    (x,) = probe.fresh()
    outputs = cls.apply(x)
    if not isinstance(outputs, tuple) or len(outputs) < 2:
        return False
    w = torch.ones_like(outputs[1])
    (g,) = torch.autograd.grad(outputs[1], x, w, allow_unused=True)
    return g is None or bool(torch.all(g == 0))


def _second_derivative_missing(chk: _Check, node: Any, grads: Sequence[torch.Tensor]) -> tuple[str, dict[str, Any]]:
    cls = type(node)._forward_cls
    if chk.ex.id == "cube":  # the gradient must come from CubeBackward, whose own backward is the point
        for g in grads:
            backward_node = _find_node(g, chk.ex.backward_classes, strict=True) if g.grad_fn is not None else None
            if backward_node is None:
                mistake, fields = dx.why_untracked(cls.backward, dx.tensor_attributes(node))
                return mistake if mistake != "untracked_backward" else "backward_not_through_function", {
                    **fields, "classes": " / ".join(chk.ex.backward_classes)}
            return dx.why_untracked(type(backward_node)._forward_cls.backward, dx.tensor_attributes(backward_node))
    return dx.why_untracked(cls.backward, dx.tensor_attributes(node))


@_guard("second derivatives")
def second_derivatives(chk: _Check, fn: Function, probes: list[Probe]) -> tuple[str, int]:
    """Differentiating the student's gradient (create_graph=True) gives PyTorch's second derivatives, with
    respect to each input and to grad_output, and gradgradcheck passes."""
    ex = chk.ex
    for probe in probes:
        inputs = probe.fresh()
        out, node = _run_forward(chk, fn, probe, inputs)
        cls = type(node)._forward_cls
        if not _check_forward_values(chk, probe, out, inputs):
            chk.fail("forward_wrong_before_derivatives", probe)
        v = _grad_output(out, probe.seed).requires_grad_()
        diff = _differentiable(probe, inputs)
        try:
            grads = torch.autograd.grad(out, [x for _, _, x in diff], v, create_graph=True, allow_unused=True)
        except Exception as exc:
            chk.fail_from_exception(exc, probe, stage="running your backward with create_graph=True")
        ref_inputs = probe.fresh()
        ref_diff = [x for _, _, x in _differentiable(probe, ref_inputs)]
        ref_v = v.detach().clone().requires_grad_()
        ref_grads = torch.autograd.grad(ex.reference(*ref_inputs), ref_diff, ref_v, create_graph=True)
        if any(g is None or not dx.close(g, e) for g, e in zip(grads, ref_grads)):
            chk.fail("first_order_wrong_before_second", probe)
        # Differentiate sum(u * grad) with respect to every input and to grad_output.
        u = [_values(tuple(g.shape), probe.seed + 13 + k) for k, g in enumerate(ref_grads)]
        names = [n for _, n, _ in diff] + ["grad_output"]
        targets = [x for _, _, x in diff] + [v]
        tracked = [(g, uk) for g, uk in zip(grads, u) if g.requires_grad]
        try:
            received = (
                torch.autograd.grad([g for g, _ in tracked], targets, [uk for _, uk in tracked], allow_unused=True)
                if tracked else [None] * len(targets)
            )
        except Exception as exc:
            chk.fail_from_exception(exc, probe, stage="differentiating your backward (double backward)")
        expected = torch.autograd.grad(list(ref_grads), ref_diff + [ref_v], u, allow_unused=True)
        expected = [e if e is not None else torch.zeros_like(t) for e, t in zip(expected, targets)]
        for j, (name, e, r) in enumerate(zip(names, expected, received)):
            if r is None:
                if bool(torch.all(e == 0)):
                    continue
                if ex.id == "sinh" and _sinh_extra_outputs_ignored(cls, probe):
                    chk.fail("extra_output_gradients_ignored", probe, name=name)
                mistake, fields = (_second_derivative_missing(chk, node, grads) if name != "grad_output"
                                   else ("second_derivative_missing", {}))
                chk.fail(mistake, probe, name=name, where=f"d(your gradient)/d{name}", **fields)
            if dx.close(r, e):
                continue
            if ex.id == "sinh" and _sinh_extra_outputs_ignored(cls, probe):
                chk.fail("extra_output_gradients_ignored", probe, name=name)
            where, ev, rv = dx.worst_element(e, r.detach())
            others = [names[k] for k, ek in enumerate(expected) if k != j and dx.close(r, ek)]
            backward_cls = ex.backward_classes[0] if ex.backward_classes else cls.__name__
            if others:
                chk.fail("double_backward_wrong_order", probe, name=name, other=others[0], cls=backward_cls,
                         where=f"d(your gradient)/d{name} at {where}", expected=ev, received=rv)
            chk.fail("second_derivative_wrong", probe, name=name, where=f"d(your gradient)/d{name} at {where}",
                     expected=ev, received=rv)
        if ex.backward_classes:
            for g in grads:
                if g is not None and _find_node(g, ex.backward_classes, strict=True) is None:
                    chk.fail("backward_not_through_function", probe, classes=" / ".join(ex.backward_classes))
        _run_gradcheck(chk, probe, fn, probe.fresh(), second=True)
    return "second derivatives match PyTorch's and gradgradcheck passes", len(probes)


# --- structure -----------------------------------------------------------------------------------


def _check_needs_input_grad(chk: _Check, fn: Function, probe: Probe) -> None:
    """Every pattern of requires_grad gets correct gradients, and None where no gradient is needed."""
    tensor_positions = [i for i, x in enumerate(probe.inputs) if isinstance(x, torch.Tensor)]
    for size in range(1, len(tensor_positions) + 1):
        for pattern in itertools.combinations(tensor_positions, size):
            if len(pattern) == len(tensor_positions):
                continue  # all inputs requiring grad is what the derivative checks cover
            inputs = tuple(
                x.detach().clone().requires_grad_(i in pattern) if isinstance(x, torch.Tensor) else x
                for i, x in enumerate(probe.inputs)
            )
            described = ", ".join(probe.names[i] for i in pattern)
            out, node = _run_forward(chk, fn, probe, inputs)
            v = _grad_output(out, probe.seed)
            diff = _differentiable(probe, inputs)
            try:
                received = torch.autograd.grad(out, [x for _, _, x in diff], v, allow_unused=True, retain_graph=True)
            except Exception as exc:
                chk.fail_from_exception(exc, probe, stage=f"running backward when only {described} require grad")
            ref_inputs = tuple(x.detach().clone().requires_grad_(i in pattern) if isinstance(x, torch.Tensor) else x
                               for i, x in enumerate(probe.inputs))
            ref_diff = [x for _, _, x in _differentiable(probe, ref_inputs)]
            expected = torch.autograd.grad(chk.ex.reference(*ref_inputs), ref_diff, v)
            for (_, name, _), e, r in zip(diff, expected, received):
                if r is None or not dx.close(r, e):
                    chk.fail("needs_input_grad_wrong", probe, name=name, pattern=described)
            cls = type(node)._forward_cls
            try:
                with torch.no_grad():
                    raw = cls.backward(node, v)  # the graph was retained above, so its saved tensors are still there
            except Exception as exc:
                chk.fail_from_exception(exc, probe, stage=f"calling {cls.__name__}.backward")
            raw = raw if isinstance(raw, tuple) else (raw,)
            for name, x, g in zip(probe.names, inputs, raw):
                if isinstance(x, torch.Tensor) and not x.requires_grad and g is not None:
                    chk.fail("needs_input_grad_ignored", probe, name=name, cls=cls.__name__, pattern=described)


@_guard("structure")
def structure(chk: _Check, fn: Function, probes: list[Probe]) -> tuple[str, int]:
    """A real custom Function that saves tensors with save_for_backward (none as ctx attributes); for
    Functions with several inputs, correct use of ctx.needs_input_grad and None for non-tensor arguments."""
    ex = chk.ex
    for probe in probes:
        inputs = probe.fresh()
        out, node = _run_forward(chk, fn, probe, inputs)
        cls = type(node)._forward_cls
        attrs = dx.tensor_attributes(node)
        if attrs:
            chk.fail("tensor_on_ctx", probe, cls=cls.__name__, attrs=", ".join(attrs))
        v = _grad_output(out, probe.seed)
        _check_raw_backward(chk, probe, inputs, out, node, v, values=False)  # values: first derivatives' job
        if ex.backward_classes:
            diff = [x for _, _, x in _differentiable(probe, inputs)]
            try:
                grads = torch.autograd.grad(out, diff, v.requires_grad_(), create_graph=True)
            except Exception as exc:
                chk.fail_from_exception(exc, probe, stage="running your backward with create_graph=True")
            for g in grads:
                backward_node = _find_node(g, ex.backward_classes, strict=True) if g.grad_fn is not None else None
                if backward_node is None:
                    chk.fail("backward_not_through_function", probe, classes=" / ".join(ex.backward_classes))
                attrs = dx.tensor_attributes(backward_node)
                if attrs:
                    chk.fail("tensor_on_ctx", probe, cls=type(backward_node)._forward_cls.__name__, attrs=", ".join(attrs))
    if len(ex.input_names) > 1:  # after the per-probe checks: None for a non-tensor is the first thing to fix
        for probe in probes:
            _check_needs_input_grad(chk, fn, probe)
    return "a real custom Function; tensors saved with save_for_backward", len(probes)
