"""The probes of the function exercises of notebooks 1 and 4 (vjp, accumulate, secondderiv; hvp, penalty), built
from the check's keyword arguments with seeded generators (the observer and the judge build the same ones), and
PyTorch's references for them (``torch.autograd.functional``, ``torch.autograd.grad``): the judge compares with
these, the observer uses ``penalty_reference`` / ``grader_penalty`` to try the student's own Functions.
The registry of these checks is ``grader.spec.functions``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch
from torch.autograd.functional import hessian, jacobian

from grader.spec.exercises import _softplus
from grader.spec.messages import say
from grader.spec.tolerances import FUNCTION_ATOL as ATOL, FUNCTION_RTOL as RTOL  # noqa: F401 (function_fields._close)

# A probe's description is a sentence the student reads (the "probe:" line): written in the notebook's language.


def _of_shape(name: str, *shape: int) -> str:
    """'x of shape (3,)'."""
    return say("of_shape", name=name, shape=tuple(shape))


DTYPE = torch.float64


# ---------------------------------------------------------------------------------------------
# any exercise


def _rand(gen: torch.Generator, *shape: int, low: float = -2.0, high: float = 2.0) -> torch.Tensor:
    return torch.rand(*shape, generator=gen, dtype=DTYPE) * (high - low) + low


def _leaf(t: torch.Tensor) -> torch.Tensor:
    return t.detach().clone().requires_grad_(True)


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
        probes.append(_VjpProbe(say("probe_formula", formula="f(x) = sin(x) * x", x=_of_shape("x", n)),
                                lambda t: torch.sin(t) * t, x, _rand(gen, n)))
        a = _rand(gen, n + 2, n)
        probes.append(
            _VjpProbe(
                say("probe_formula_with", formula="f(x) = A @ tanh(x)", a=_of_shape("A", n + 2, n), x=_of_shape("x", n)),
                lambda t, a=a: a @ torch.tanh(t),
                _rand(gen, n),
                _rand(gen, n + 2),
            )
        )
        b = _rand(gen, n, 4)
        probes.append(
            _VjpProbe(
                say("probe_formula_with", formula="f(x) = (x ** 2) @ B", a=_of_shape("B", n, 4), x=_of_shape("x", 2, n)),
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


def _vjp_setup(args: dict[str, Any]) -> list[tuple[_VjpProbe, torch.Tensor | None]]:
    return [(p, None) for p in _vjp_probes(args["sizes"], args["seed"])]


def _with_stale_grads(make_probes: Callable[[Any, int], list[Any]]) -> Callable[[dict[str, Any]], list[Any]]:
    """Probes of which every second one starts with a stale x.grad the student's function must not touch."""

    def setup(args: dict[str, Any]) -> list[tuple[Any, torch.Tensor | None]]:
        probes = make_probes(args["sizes"], args["seed"] + 1000)
        gen = torch.Generator().manual_seed(args["seed"] + 2000)
        return [(p, None if i % 2 == 0 else _rand(gen, *p.x.shape, low=5.0, high=9.0)) for i, p in enumerate(probes)]

    return setup


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
                    say("probe_batches", name=name, w=_of_shape("w", n), n_batches=n_batches),
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
            probes.append(_ElementwiseProbe(say("probe_formula", formula=f"f(x) = {name}", x=_of_shape("x", n)), f,
                                            _rand(gen, n)))
    return probes


def _general_probes(sizes: Sequence[int], seed: int) -> list[_ElementwiseProbe]:
    gen = torch.Generator().manual_seed(seed)
    probes = [_ElementwiseProbe(say("probe_zero_d"), _ELEMENTWISE[0][1], torch.tensor(2.0, dtype=DTYPE))]
    for n in sizes:
        probes.append(_ElementwiseProbe(say("probe_formula", formula="f(x) = sin(x) * x", x=_of_shape("x", 2, n)),
                                        _ELEMENTWISE[1][1], _rand(gen, 2, n)))
        probes.append(_ElementwiseProbe(say("probe_formula", formula="f(x) = exp(-x ** 2)", x=_of_shape("x", n, 1, 2)),
                                        _ELEMENTWISE[2][1], _rand(gen, n, 1, 2)))
    return probes


def _elementwise_derivatives(p: _ElementwiseProbe) -> tuple[torch.Tensor, torch.Tensor]:
    """(f'(x), f''(x)) elementwise, from the diagonals of the Jacobian and Hessian of sum(f)."""
    x = p.x.detach()
    n = x.numel()
    first = jacobian(lambda t: p.f(t).sum(), x).reshape(x.shape)
    second = hessian(lambda t: p.f(t).sum(), x).reshape(n, n).diagonal().reshape(x.shape)
    return first, second


def _second_setup(args: dict[str, Any]) -> list[tuple[_ElementwiseProbe, torch.Tensor | None]]:
    return [(p, None) for p in _second_probes(args["sizes"], args["seed"])]


# ---------------------------------------------------------------------------------------------
# exercise "hvp" (notebook 4): hvp(f, x, v) by double backward, hvp_forward(f, x, v) by forward-over-reverse


# Names of the student's Functions a probe may be built from, with the PyTorch op the reference uses.
OWN_FUNCTIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "Softplus": _softplus,
    "Square": torch.square,
    "Exp": torch.exp,
    "Cube": lambda t: t**3,
    "Sinh": torch.sinh,
}


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
        probes.append(_HvpProbe(say("probe_formula", formula="f(x) = sum(sin(x) * x²)", x=_of_shape("x", n)),
                                lambda ops: lambda t: (torch.sin(t) * t**2).sum(), _rand(gen, n), _rand(gen, n)))
        probes.append(_HvpProbe(say("probe_rosenbrock", x=_of_shape("x", n)),
                                lambda ops: lambda t: (100 * (t[1:] - t[:-1] ** 2) ** 2 + (1 - t[:-1]) ** 2).sum(),
                                _rand(gen, n, low=-1.5, high=1.5), _rand(gen, n)))
        a = _rand(gen, n + 1, n)
        probes.append(_HvpProbe(say("probe_formula", formula="f(x) = logsumexp(A @ x)", x=_of_shape("A", n + 1, n)),
                                lambda ops, a=a: lambda t: torch.logsumexp(a @ t, dim=0), _rand(gen, n), _rand(gen, n)))
        b, c = _rand(gen, n + 2, n), _rand(gen, n + 2)
        probes.append(_HvpProbe(say("probe_softplus", b=_of_shape("B", n + 2, n)),
                                lambda ops, b=b, c=c: lambda t: (c * ops["Softplus"](b @ t)).sum(),
                                _rand(gen, n), _rand(gen, n), uses=("Softplus",), forward_mode=forward_mode))
        if forward_mode:
            continue  # notebook 3's Functions are written with ctx in forward and have no jvp: not for torch.func
        # One each, so that a wrong one is named. Not Cube: its CubeBackward is differentiable once by design
        # (NumPy inside), and torch.autograd.functional.hvp, a correct answer, differentiates three times.
        for name in ("Square", "Exp", "Sinh"):
            d = _rand(gen, n)
            probes.append(_HvpProbe(say("probe_own_function", name=name, x=_of_shape("x", n)),
                                    lambda ops, d=d, name=name: lambda t: (d * ops[name](t)).sum(),
                                    _rand(gen, n, low=-1.0, high=1.0), _rand(gen, n), uses=(name,), optional=True))
    return probes


def _hvp_setup(args: dict[str, Any]) -> list[tuple[_HvpProbe, None]]:
    return [(p, None) for p in _hvp_probes(args["sizes"], args["seed"])]


def _hvp_forward_setup(args: dict[str, Any]) -> list[tuple[_HvpProbe, None]]:
    return [(p, None) for p in _hvp_probes(args["sizes"], args["seed"], forward_mode=True)]


# ---------------------------------------------------------------------------------------------
# exercise "penalty" (notebook 5): gradient_penalty(f, w, x), WGAN-GP style


@dataclass(frozen=True)
class _PenaltyProbe:
    desc: str
    make: Callable[[dict[str, Callable[..., Any]]], Callable[[torch.Tensor, torch.Tensor], torch.Tensor]]
    w: torch.Tensor
    x: torch.Tensor
    uses: tuple[str, ...] = ()
    # judged only when the notebook defines every Function in ``uses``: notebook 5 asks for Softplus to be pasted
    # from notebook 4 (section 0, not graded), and a penalty is not charged for a paste not made
    optional: bool = False

    def reference(self) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
        return self.make({name: OWN_FUNCTIONS[name] for name in self.uses})


def _penalty_probes(sizes: Sequence[int], seed: int) -> list[_PenaltyProbe]:
    gen = torch.Generator().manual_seed(seed)
    batch, features = int(sizes[0]), int(sizes[1]) if len(sizes) > 1 else 3
    hidden = 3
    return [
        _PenaltyProbe(say("probe_formula", formula="f(w, x) = 2 * tanh(x @ w)", x=_of_shape("x", batch, features)),
                      lambda ops: lambda w, x: 2 * torch.tanh(x @ w),
                      _rand(gen, features), _rand(gen, batch, features)),
        _PenaltyProbe(say("probe_formula", formula="f(w, x) = sum((w * x)², dim=1) + sin(x @ w)",
                          x=_of_shape("x", batch, features)),
                      lambda ops: lambda w, x: ((w * x) ** 2).sum(1) + torch.sin(x @ w),
                      _rand(gen, features, low=-0.8, high=0.8), _rand(gen, batch, features)),
        _PenaltyProbe(say("probe_penalty_softplus", w1=(hidden, features), w2=(hidden,),
                          x=_of_shape("x", batch, features)),
                      lambda ops: lambda w, x: ops["Softplus"](x @ w[:hidden * features].reshape(hidden, features).T)
                      @ w[hidden * features:],
                      _rand(gen, hidden * features + hidden), _rand(gen, batch, features), uses=("Softplus",),
                      optional=True),
        # Image-shaped samples [B, C, H, W]: each sample's gradient has several dimensions, and its norm is taken over
        # all of them (a norm over dimension 1 alone is the same as the flattened one only for 2-D x).
        _PenaltyProbe(say("probe_penalty_images", sample=(2, 2, features), x=_of_shape("x", batch, 2, 2, features)),
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


def grader_penalty(f: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], w: torch.Tensor,
                    x: torch.Tensor) -> torch.Tensor:
    """[the penalty, then its gradient with respect to w], flattened into one vector: computed the way a correct
    answer does, here through the student's own Functions (whether it is right says whether they are fit)."""
    value = penalty_reference(f, w, x)
    (gradient,) = torch.autograd.grad(value, w)
    return torch.cat([value.detach().reshape(1), gradient.reshape(-1)])
