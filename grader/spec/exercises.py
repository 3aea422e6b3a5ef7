"""The custom-Function exercises: what each computes, its PyTorch reference, and its probe inputs.

References are PyTorch's own ops, evaluated in float64 on the same probes as
the student's Function (micrograd's rule: the reference is PyTorch itself).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch
import torch.nn.functional as F

from grader.spec.messages import EN, heading_in, say

Shape = tuple[int, ...]


# PyTorch's answers for notebook 4's checks, computed without torch.func: torch.func's first call imports
# torch._dynamo (2 s of CPU on a 2-core VM), which the judging process would pay before its first verdict. The
# sandboxed side still runs the student's Functions through torch.func itself; these are only the references.


def reference_jvp(fn: Callable[..., torch.Tensor], primals: Sequence[torch.Tensor],
                  tangents: Sequence[torch.Tensor]) -> torch.Tensor:
    """The jvp of ``fn`` at ``primals`` along ``tangents`` (what torch.func.jvp returns), by reverse mode twice:
    ``g(u) = Jᵀu`` is linear in ``u``, so ``J t`` is the gradient of ``⟨g(u), t⟩`` with respect to ``u``.
    ``fn`` is PyTorch's own ops (the exercise's reference), whose backward formulas are differentiable. Not
    forward mode's dual tensors: a process's first ``make_dual`` compiles torch's forward-mode decompositions
    with TorchScript, about 0.8 s of CPU that the grading process paid at the start of every class."""
    inputs = [p.detach().requires_grad_() for p in primals]
    out = fn(*inputs)
    if not out.requires_grad:
        return torch.zeros_like(out).detach()  # a constant: its jvp is 0
    u = torch.zeros_like(out, requires_grad=True)
    grads = torch.autograd.grad(out, inputs, u, create_graph=True, allow_unused=True)
    inner = [(g * t).sum() for g, t in zip(grads, tangents) if g is not None and g.requires_grad]
    if not inner:
        return torch.zeros_like(out).detach()
    (jvp,) = torch.autograd.grad(torch.stack(inner).sum(), u, allow_unused=True)
    return torch.zeros_like(out).detach() if jvp is None else jvp.detach().clone()


def reference_vmap(fn: Callable[..., torch.Tensor], stacked: Sequence[torch.Tensor]) -> torch.Tensor:
    """``torch.func.vmap(fn)(*stacked)``, as a loop over the leading dimension."""
    return torch.stack([fn(*sample) for sample in zip(*stacked)])


def reference_per_sample_grad(fn: Callable[..., torch.Tensor], stacked: Sequence[torch.Tensor]) -> torch.Tensor:
    """``torch.func.vmap(torch.func.grad(lambda *xs: fn(*xs).sum()))(*stacked)``: per sample, the gradient of the
    sum of ``fn`` with respect to its first input, as a loop over the leading dimension."""
    grads = []
    for sample in zip(*stacked):
        first = sample[0].detach().requires_grad_()
        (grad,) = torch.autograd.grad(fn(first, *sample[1:]).sum(), first)
        grads.append(grad)
    return torch.stack(grads)


def reference_hessian(f: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(∇f(x), the Hessian of f at x) by backward and double backward (``torch.autograd.functional.hessian``): what
    torch.func.grad and torch.func.hessian give."""
    tracked = x.detach().requires_grad_()
    (grad,) = torch.autograd.grad(f(tracked), tracked)
    return grad, torch.autograd.functional.hessian(f, x.detach())
Input = torch.Tensor | None


@dataclass(frozen=True)
class Probe:
    """One set of inputs for a Function, plus how to describe it in a message."""

    inputs: tuple[Input, ...]
    names: tuple[str, ...]
    seed: int
    note: str = ""  # how the call differs from the usual one: a key of grader.spec.messages, e.g. probe_without_bias

    @property
    def dtype(self) -> torch.dtype:
        """The dtype of the probe's tensors (every tensor of a probe has the same)."""
        return next((x.dtype for x in self.inputs if isinstance(x, torch.Tensor)), torch.float64)

    def describe(self) -> str:
        parts = []
        for name, value in zip(self.names, self.inputs):
            if isinstance(value, torch.Tensor):
                parts.append(f"{name} {tuple(value.shape)}")
            else:
                parts.append(f"{name}={value!r}")
        if self.note:
            parts.append(say(self.note) if self.note in EN else self.note)
        return say("probe_seed", parts=", ".join(parts), dtype=str(self.dtype).removeprefix('torch.'), seed=self.seed)

    def fresh(self) -> tuple[Input, ...]:
        """Leaf copies of the inputs (same values), so each call builds its own graph."""
        return tuple(
            x.detach().clone().requires_grad_(x.requires_grad) if isinstance(x, torch.Tensor) else x
            for x in self.inputs
        )


@dataclass(frozen=True)
class Exercise:
    id: str
    title: str
    classes: tuple[str, ...]  # custom Function classes that must produce the result
    formula: str  # how messages write the function
    reference: Callable[..., torch.Tensor]
    input_names: tuple[str, ...]
    make_probes: Callable[[Shape, int], list[Probe]]
    sections: dict[str, str] = field(default_factory=dict)  # check -> notebook section that teaches it
    backward_classes: tuple[str, ...] = ()  # Functions that must compute the gradient itself (CubeBackward)
    default_shapes: tuple[Shape, ...] = ((3, 3),)
    notebook: str = "03_double_backward.ipynb"
    # Probes every check adds after those of its shapes: float32, large values, other argument counts...
    extra_probes: Callable[[int], list[Probe]] | None = None
    # What the Function returns, by name: the first is the differentiable result every derivative check uses;
    # the others must not require grad (ctx.mark_non_differentiable), e.g. SortValues' ("values", "indices").
    outputs: tuple[str, ...] = ("output",)
    setup_context: bool = False  # the structure check requires forward without ctx plus setup_context

    def reference_output(self, *inputs: Input) -> torch.Tensor:
        """The reference's differentiable output (the reference returns a tuple when there are several)."""
        value = self.reference(*inputs)
        return value[0] if isinstance(value, tuple) else value

    def reference_outputs(self, *inputs: Input) -> tuple[torch.Tensor, ...]:
        value = self.reference(*inputs)
        return tuple(value) if isinstance(value, tuple) else (value,)

    def probes(self, shapes: Sequence[Shape], seed: int, extras: bool = True, draw: int | None = None) -> list[Probe]:
        """The probes of a check: those of each shape (from ``seed``), then the exercise's extra probes. ``draw``
        (``draw_seed()``: a new one for each self-check and each grading run) seeds one of them instead of
        ``seed``, so that no backward can be written for values known in advance (the probes' generation and the
        test cells' seeds are public): the extras' maker marked ``takes_draw`` seeds one of its own with it (no
        probe more), else one more probe of the first shape is drawn."""
        probes: list[Probe] = []
        for offset, shape in enumerate(shapes):
            probes.extend(self.make_probes(tuple(shape), seed * 1000 + offset))
        drawn = draw is None
        if extras and self.extra_probes is not None:
            if getattr(self.extra_probes, "takes_draw", False):
                probes.extend(self.extra_probes(seed * 1000 + 900, draw))
                drawn = True
            else:
                probes.extend(self.extra_probes(seed * 1000 + 900))
        if not drawn and shapes:
            probes.extend(self.make_probes(tuple(shapes[0]), draw))
        return probes

    def section(self, check: str, mistake: str = "") -> str:
        """Where the notebooks teach what ``mistake`` (or else ``check``) is about, e.g. '"7. ..." in 02_...'."""
        own = self.sections.get(mistake) or self.sections.get(check)
        if own:
            return say("section_here", heading=heading_in(own))
        notebook, heading = SECTIONS.get(mistake, (self.notebook, self.sections.get("default", "")))
        if not heading:
            return ""
        if notebook == self.notebook:
            return say("section_here", heading=heading_in(heading))
        return say("section_in_notebook", heading=heading_in(heading), notebook=notebook)


def _values(shape: Shape, seed: int, low: float = 0.3, high: float = 1.4) -> torch.Tensor:
    """float64 values with random signs and magnitudes in [low, high]: away from 0, so ratios are clear."""
    gen = torch.Generator().manual_seed(seed)
    magnitude = torch.rand(shape, generator=gen, dtype=torch.float64).mul_(high - low).add_(low)
    return _signed(magnitude, torch.rand(shape, generator=gen))


def _wide(shape: Shape, seed: int, low: float = 0.01, high: float = 8.0) -> torch.Tensor:
    """float64 values with magnitudes spread over [low, high] in log scale, stratified (one in each of n equal bins),
    the two ends exactly ``low`` and ``high`` whatever the seed, half of them negative: a backward written for the
    ordinary probes' range only (right for |x| < 1.4, wrong elsewhere), for one sign, or right everywhere but at
    the largest or smallest magnitudes of the range, is wrong somewhere here, for every seed (this probe is the
    one drawn anew each run). With one value drawn in the top bin, a backward wrong only for |x| > 5 passed on
    about 45% of draws."""
    gen = torch.Generator().manual_seed(seed)
    n = 1
    for size in shape:
        n *= size
    exponent = (torch.arange(n, dtype=torch.float64) + torch.rand(n, generator=gen, dtype=torch.float64)) / n
    if n > 1:
        exponent[0], exponent[-1] = 0.0, 1.0  # the range's ends, on every draw
    magnitude = low * (high / low) ** exponent[torch.randperm(n, generator=gen)]
    negative = torch.randperm(n, generator=gen) < n // 2
    return torch.where(negative, -magnitude, magnitude).reshape(shape)


def _signed(magnitude: torch.Tensor, uniform: torch.Tensor) -> torch.Tensor:
    """``magnitude`` negated where ``uniform < 0.5``: bit for bit ``magnitude * sign`` with a sign tensor of ±1.0,
    in one operation instead of three (probes and grad_outputs are made ~1,000 times a student, on both sides)."""
    return torch.where(uniform < 0.5, -magnitude, magnitude)


def _unary(name: str) -> Callable[[Shape, int], list[Probe]]:
    def make(shape: Shape, seed: int) -> list[Probe]:
        return [Probe((_values(shape, seed).requires_grad_(),), (name,), seed)]

    return make


def _in_dtype(probe: Probe, dtype: torch.dtype) -> Probe:
    inputs = tuple(x.detach().to(dtype).requires_grad_(x.requires_grad) if isinstance(x, torch.Tensor) else x
                   for x in probe.inputs)
    return Probe(inputs, probe.names, probe.seed, probe.note)


def _unary_extras(name: str, large: bool = False, huge: bool = False) -> Callable[[int], list[Probe]]:
    """A float32 probe (a backward wrong only in float32 must not pass), a probe of |x| from 0.01 to 8 (a backward
    right only in the ordinary probes' range must not pass); for exp |x| in [16, 18]; for softplus
    |x| in [200, 1000], where eˣ overflows float64 (x > 709.8): a naive log(1 + eˣ) gives inf there."""

    def make(seed: int, draw: int | None = None) -> list[Probe]:
        wide = seed + 3 if draw is None else draw  # the probe drawn anew each run (Exercise.probes)
        probes = [_in_dtype(_unary(name)((2, 3), seed)[0], torch.float32),
                  Probe((_wide((8,), wide).requires_grad_(),), (name,), wide, "probe_wide_values")]
        if large:
            probes.append(Probe((_values((4,), seed + 1, low=16.0, high=18.0).requires_grad_(),), (name,), seed + 1))
        if huge:
            probes.append(Probe((_values((6,), seed + 2, low=200.0, high=1000.0).requires_grad_(),), (name,), seed + 2,
                                "probe_huge_values"))
        return probes

    make.takes_draw = True  # type: ignore[attr-defined]
    return make


# The probe makers an exercise's entry may use (docs/design.md, "To add an exercise"): a unary Function's probes of each
# shape, and its extra probes (float32; ``large``: |x| in [16, 18]; ``huge``: |x| in [200, 1000]).
unary_probes = _unary
unary_extras = _unary_extras


def _linear_extras(seed: int, draw: int | None = None) -> list[Probe]:
    """float32; `LinearFunction.apply(x, w)` with two arguments (its docstring promises it); out_features = 1 (the
    probes drawn anew each run: Exercise.probes)."""
    float32 = _in_dtype(_linear_probes((3, 4, 2), seed)[0], torch.float32)
    x, w, _ = _linear_probes((3, 4, 2), seed + 1)[0].inputs
    two_arguments = Probe((x, w), ("input", "weight"), seed + 1, "probe_without_bias")
    return [float32, two_arguments, *_linear_probes((5, 3, 1), seed + 2 if draw is None else draw)]


_linear_extras.takes_draw = True  # type: ignore[attr-defined]


def _linear_probes(shape: Shape, seed: int) -> list[Probe]:
    if len(shape) != 3:
        raise ValueError(f"linear shapes are (batch, in_features, out_features), got {shape}")
    batch, n_in, n_out = shape
    x = _values((batch, n_in), seed)
    w = _values((n_out, n_in), seed + 1)
    b = _values((n_out,), seed + 2)
    names = ("input", "weight", "bias")
    return [
        Probe((x.requires_grad_(), w.requires_grad_(), b.requires_grad_()), names, seed),
        Probe((x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_(), None), names, seed),
    ]


def _cube(x: torch.Tensor) -> torch.Tensor:
    return x**3


def _softplus(x: torch.Tensor) -> torch.Tensor:
    """log(1 + eˣ) for any x, with exact first and second derivatives through autograd everywhere (F.softplus
    switches to x above its threshold of 20; torch.logaddexp's second derivative is nan at x = -1000).

    Each branch sees only inputs where it is finite (where's gradient of an unused inf would be nan), and there
    is no abs(): clamp(x, 0) + log1p(e^-|x|) has slope 1, not ½, at x = 0, and abs's double backward loads
    torch._dynamo (a second of the grading process's time, on the way to its first softplus verdict)."""
    positive = x > 0
    above, below = torch.where(positive, x, 0.0), torch.where(positive, 0.0, x)
    return torch.where(positive, above + torch.log1p(torch.exp(-above)), torch.log1p(torch.exp(below)))


def _sort_values(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Sorted along the last dimension, and the positions the values came from, in x's dtype."""
    values, indices = torch.sort(x, dim=-1)
    return values, indices.to(x.dtype)


def _at_least_1d(make: Callable[[Shape, int], list[Probe]]) -> Callable[[Shape, int], list[Probe]]:
    def probes(shape: Shape, seed: int) -> list[Probe]:
        if len(shape) == 0:
            raise ValueError("sortvalues sorts along the last dimension: its shapes need at least one dimension")
        return make(shape, seed)

    return probes


def _sort_extras(seed: int, draw: int | None = None) -> list[Probe]:
    """A float32 probe (its indices must come back as float32 too), drawn anew each run (Exercise.probes)."""
    return [_in_dtype(_unary("x")((2, 4), seed if draw is None else draw)[0], torch.float32)]


_sort_extras.takes_draw = True  # type: ignore[attr-defined]


def draw_seed() -> int:
    """The seed of the probe drawn anew for one self-check or one grading run (``Exercise.probes``): random, never
    in the notebook's reach before its checks run. ``GRADER_PROBE_DRAW`` fixes it (to compare verdicts before and
    after a change: tests/verdicts_snapshot.py)."""
    import os
    import secrets

    fixed = os.environ.get("GRADER_PROBE_DRAW", "").strip()
    return int(fixed) if fixed.lstrip("-").isdigit() else secrets.randbelow(2**31)


def check_draw(draw: int, grade_id: str, position: int) -> int:
    """The drawn probe's seed of one check call (the ``position``-th call of test cell ``grade_id``), from the run's
    ``draw``: each check gets its own, and the one a check's code is handed tells nothing of the others' (nor of
    ``draw``: a hash cannot be inverted)."""
    import hashlib

    digest = hashlib.sha256(f"{draw}:{grade_id}:{position}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % 2**31


NB2, NB3, NB4, NB5 = ("02_custom_function.ipynb", "03_double_backward.ipynb", "04_modern_functions.ipynb",
                      "05_markers_and_capstone.ipynb")

_MARKERS = "1. Flags and markers: `once_differentiable`, `mark_non_differentiable`, `set_materialize_grads`, `mark_dirty`"
# mistake -> (notebook, section heading) that teaches it, when that is not the exercise's own section.
SECTIONS: dict[str, tuple[str, str]] = {
    "not_custom_function": (NB2, "3. Always call `.apply`, never `forward` directly"),
    "no_graph": (NB2, "3. Always call `.apply`, never `forward` directly"),
    "output_after_function": (NB2, "3. Always call `.apply`, never `forward` directly"),
    "function_of_computed_input": (NB2, "3. Always call `.apply`, never `forward` directly"),
    "tensor_subclass": (NB2, "3. Always call `.apply`, never `forward` directly"),
    "derivative_by_autograd": (NB2, "2. Anatomy of a Function: `forward`, `backward` and `ctx`"),
    "forgot_grad_output": (NB2, "2. Anatomy of a Function: `forward`, `backward` and `ctx`"),
    "tensor_on_ctx": (NB2, "5. Why tensors must NOT be stored as `ctx` attributes"),
    "gradient_for_non_tensor": (NB2, "6. Non-tensor arguments: plain `ctx` attributes, and `None` as their gradient"),
    "wrong_number_of_gradients": (NB2, "7. `backward` returns one gradient per `forward` input — in order"),
    "gradients_in_wrong_order": (NB2, "7. `backward` returns one gradient per `forward` input — in order"),
    "missing_gradient": (NB2, "7. `backward` returns one gradient per `forward` input — in order"),
    "needs_input_grad_ignored": (NB2, "9. `ctx.needs_input_grad`: skip work nobody asked for"),
    "needs_input_grad_wrong": (NB2, "9. `ctx.needs_input_grad`: skip work nobody asked for"),
    "gradient_dtype": (NB2, "11. Checking a backward with `gradcheck` (and why `float64`)"),
    "gradcheck_failed": (NB2, "11. Checking a backward with `gradcheck` (and why `float64`)"),
    "detach_in_backward": (NB3, "1. What autograd records inside a custom Function"),
    "no_grad_in_backward": (NB3, "1. What autograd records inside a custom Function"),
    "numpy_in_backward": (NB3, "5. When backward is not tracked: Cube and CubeBackward"),
    "untracked_backward": (NB3, "1. What autograd records inside a custom Function"),
    "intermediates_not_outputs": (NB3, "4. Saving intermediate results: Sinh"),
    "extra_output_gradients_ignored": (NB3, "4. Saving intermediate results: Sinh"),
    "backward_not_through_function": (NB3, "5. When backward is not tracked: Cube and CubeBackward"),
    "derivatives_right_not_through_function": (NB3, "5. When backward is not tracked: Cube and CubeBackward"),
    "double_backward_wrong_order": (NB3, "5. When backward is not tracked: Cube and CubeBackward"),
    "needs_setup_context": (NB4, "1. The `setup_context` style: `forward` without `ctx`"),
    "forward_takes_ctx": (NB4, "1. The `setup_context` style: `forward` without `ctx`"),
    "no_vmap_rule": (NB4, "3. `vmap`: `generate_vmap_rule` or your own `vmap` rule"),
    "not_vmap_compatible": (NB4, "3. `vmap`: `generate_vmap_rule` or your own `vmap` rule"),
    "vmap_wrong": (NB4, "3. `vmap`: `generate_vmap_rule` or your own `vmap` rule"),
    "jvp_not_implemented": (NB4, "4. Forward mode: `jvp`, dual tensors and `torch.func.jvp`"),
    "jvp_not_saved_for_forward": (NB4, "4. Forward mode: `jvp`, dual tensors and `torch.func.jvp`"),
    "jvp_ignores_tangent": (NB4, "4. Forward mode: `jvp`, dual tensors and `torch.func.jvp`"),
    "jvp_wrong": (NB4, "4. Forward mode: `jvp`, dual tensors and `torch.func.jvp`"),
    **{mistake: (NB5, _MARKERS) for mistake in ("once_differentiable", "output_not_marked_non_differentiable",
                                                "first_output_marked_non_differentiable")},
}

EXERCISES: dict[str, Exercise] = {
    ex.id: ex
    for ex in [
        Exercise(
            id="square",
            title="Square",
            classes=("Square",),
            formula="x²",
            reference=torch.square,
            input_names=("x",),
            make_probes=_unary("x"),
            extra_probes=_unary_extras("x"),
            sections={"default": "2. Saving inputs: Square"},
        ),
        Exercise(
            id="exp",
            title="Exp",
            classes=("Exp",),
            formula="eˣ",
            reference=torch.exp,
            input_names=("x",),
            make_probes=_unary("x"),
            extra_probes=_unary_extras("x", large=True),
            # a saved copy of the output is the Exp section's point, not Sinh's (issue 32: it cited section 4)
            sections={"default": "3. Saving outputs: Exp", "intermediates_not_outputs": "3. Saving outputs: Exp"},
        ),
        Exercise(
            id="sinh",
            title="Sinh",
            classes=("Sinh",),
            formula="sinh(x)",
            reference=torch.sinh,
            input_names=("x",),
            make_probes=_unary("x"),
            extra_probes=_unary_extras("x"),
            sections={"default": "4. Saving intermediate results: Sinh"},
        ),
        Exercise(
            id="cube",
            title="Cube",
            classes=("Cube",),
            formula="x³",
            reference=_cube,
            input_names=("x",),
            make_probes=_unary("x"),
            extra_probes=_unary_extras("x"),
            sections={"default": "5. When backward is not tracked: Cube and CubeBackward"},
            backward_classes=("CubeBackward",),
        ),
        Exercise(
            id="softplus",
            title="Softplus",
            classes=("Softplus",),
            formula="log(1 + eˣ)",
            reference=_softplus,
            input_names=("x",),
            make_probes=_unary("x"),
            extra_probes=_unary_extras("x", huge=True),
            sections={"default": "5. Exercise: `Softplus` (graded, 6 points)"},
            notebook=NB4,
            setup_context=True,
        ),
        Exercise(
            id="sortvalues",
            title="SortValues",
            classes=("SortValues",),
            formula="sort(x) along the last dimension",
            reference=_sort_values,
            input_names=("x",),
            make_probes=_at_least_1d(_unary("x")),
            extra_probes=_sort_extras,
            sections={"default": "2. Exercise: `SortValues` (graded, 4 points)"},
            default_shapes=((2, 5),),
            notebook=NB5,
            outputs=("values", "indices"),
        ),
        Exercise(
            id="linear",
            title="LinearFunction",
            classes=("LinearFunction",),
            formula="input @ weight.T + bias",
            reference=F.linear,
            input_names=("input", "weight", "bias"),
            make_probes=_linear_probes,
            extra_probes=_linear_extras,
            # notebook 2 teaches an untracked backward itself (section 11): not notebook 3 (issue 32)
            sections={"default": "12. Exercise: `LinearFunction` (graded, 6 points)",
                      **{mistake: "11. Checking a backward with `gradcheck` (and why `float64`)" for mistake in
                         ("detach_in_backward", "no_grad_in_backward", "numpy_in_backward", "untracked_backward")}},
            default_shapes=((4, 3, 2),),
            notebook="02_custom_function.ipynb",
        ),
    ]
}


def get(exercise: str) -> Exercise:
    try:
        return EXERCISES[exercise]
    except KeyError:
        raise ValueError(f"unknown exercise {exercise!r}; known: {', '.join(EXERCISES)}") from None
