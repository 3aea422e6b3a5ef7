"""A score is what the exercise's own code computed (issue 29): the Function that made the output straight from the
inputs, its own backward's numbers (not the autograd engine's), read from exact tensors (no student method in the
way), with autograd's modes as a fresh kernel has them and probes over the whole range.

Each attack below scored full marks on the derivative checks before (b0039a7): a wrong Square (factor 2 missing)
whose numbers were reported by a tensor subclass, a pass-through Function around PyTorch's own x * x, a backward
asking autograd for the derivative, one wrong only outside the probes' old range; the honest Functions around them
must keep every point. Self-checks run observer and judge in this process, as in a student's kernel; the same
observer and judge grade in the sandbox (tests/test_adversarial.py's class `trust3` runs these through nbgrader).
"""

from __future__ import annotations

import contextlib

import pytest
import torch

from grader import checks
from grader.spec.findings import CheckFailed

CHECKS = ("forward", "first_derivatives", "second_derivatives", "structure")


def _outcome(exercise: str, fn, check: str) -> str:
    """'pass' or the mistake id the check failed with."""
    try:
        getattr(checks, check)(exercise, fn, shapes=[(3, 3)])
    except CheckFailed as failure:
        return failure.finding.mistake
    return "pass"


class _Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


class _WrongSquare(_Square):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return x * grad  # factor 2 missing: honestly forward and structure only


class _Lie(torch.Tensor):
    """Reports twice its numbers to anyone who asks through its methods."""

    def reshape(self, *shape):
        return torch.Tensor.reshape(self.as_subclass(torch.Tensor) * 2, *shape)

    def detach(self):
        return torch.Tensor.detach(self.as_subclass(torch.Tensor) * 2)

    def clone(self, *args, **kwargs):
        return torch.Tensor.clone(self.as_subclass(torch.Tensor) * 2)

    def tolist(self):
        return (self.as_subclass(torch.Tensor) * 2).tolist()


class _LyingSquare(_Square):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return (x * grad).as_subclass(_Lie)


class _Pass(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad


class _RecomputingSquare(_Square):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            again = x.detach().requires_grad_()
            (d,) = torch.autograd.grad(again * again, again, grad, create_graph=torch.is_grad_enabled())
        return d


class _RecomputingOnSaved(_Square):
    """The stronger form a helper found (full marks on b0039a7): no detach, the saved input itself, create_graph."""

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            (d,) = torch.autograd.grad(x * x, x, grad, create_graph=True)
        return d


class _OverfitSquare(_Square):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return torch.where(x.abs() > 1.4, x * grad, 2 * x * grad)  # right only where the old probes looked


class _Keep:
    def __init__(self, tensor):
        self.tensor = tensor


class _ExpKeptDeeper(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = x.exp()
        ctx.result = _Keep(result)  # the catalogued "output kept on ctx", one object deeper
        return result

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.result.tensor


ATTACKS = {
    # name: (exercise, function, {check: outcome}); checks not named must pass
    "subclass reports other numbers": ("square", _LyingSquare.apply,
                                       {"first_derivatives": "tensor_subclass",
                                        "second_derivatives": "first_order_wrong_before_second"}),
    "pass-through Function around x * x": ("square", lambda x: _Pass.apply(x * x),
                                           dict.fromkeys(CHECKS, "function_of_computed_input")),
    "an op after the Function": ("square", lambda x: _Square.apply(x) * 1,
                                 dict.fromkeys(CHECKS, "output_after_function")),
    "sinh with no Sinh of its own": ("sinh", lambda x: _Pass.apply(torch.sinh(x)),
                                     dict.fromkeys(CHECKS, "function_of_computed_input")),
    "backward asks autograd": ("square", _RecomputingSquare.apply,
                               {"first_derivatives": "derivative_by_autograd",
                                "second_derivatives": "derivative_by_autograd"}),
    "backward asks autograd about its saved input": ("square", _RecomputingOnSaved.apply,
                                                    {"first_derivatives": "derivative_by_autograd",
                                                     "second_derivatives": "derivative_by_autograd"}),
    "backward right only for |x| < 1.4": ("square", _OverfitSquare.apply,
                                          {"first_derivatives": "wrong_gradient",
                                           "second_derivatives": "first_order_wrong_before_second"}),
    "output kept on ctx one object deeper": ("exp", _ExpKeptDeeper.apply, {"structure": "tensor_on_ctx"}),
    "the wrong Square itself": ("square", _WrongSquare.apply,
                                {"first_derivatives": "scaled_gradient",
                                 "second_derivatives": "first_order_wrong_before_second"}),
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_an_attack_earns_only_what_its_own_code_computes(name):
    exercise, fn, failing = ATTACKS[name]
    checks_of = CHECKS if exercise != "exp" else ("structure",)
    got = {check: _outcome(exercise, fn, check) for check in checks_of}
    want = {check: failing.get(check, "pass") for check in checks_of}
    assert got == want


@contextlib.contextmanager
def _saved_tensor_hooks_left_on():
    hooks = torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)
    hooks.__enter__()  # as a notebook cell that entered it and never left
    try:
        yield
    finally:
        hooks.__exit__(None, None, None)


@contextlib.contextmanager
def _grad_mode_off():
    torch.set_grad_enabled(False)
    try:
        yield
    finally:
        torch.set_grad_enabled(True)


@contextlib.contextmanager
def _anomaly_mode_on():
    torch.set_anomaly_enabled(True)
    try:
        yield
    finally:
        torch.set_anomaly_enabled(False)


@contextlib.contextmanager
def _hooks_disabled():
    with torch.autograd.graph.disable_saved_tensors_hooks("disabled by an earlier cell"):
        yield


@pytest.mark.parametrize("state", [_saved_tensor_hooks_left_on, _grad_mode_off, _anomaly_mode_on, _hooks_disabled],
                         ids=lambda s: s.__name__.strip("_"))
def test_autograd_state_an_earlier_cell_left_costs_a_correct_function_nothing_and_stays(state):
    with state():
        before = (torch.is_grad_enabled(), torch.is_anomaly_enabled(),
                  torch._C._autograd._top_saved_tensors_default_hooks(False) is not None,
                  torch._C._autograd._saved_tensors_hooks_is_enabled())
        assert {check: _outcome("square", _Square.apply, check) for check in CHECKS} == dict.fromkeys(CHECKS, "pass")
        after = (torch.is_grad_enabled(), torch.is_anomaly_enabled(),
                 torch._C._autograd._top_saved_tensors_default_hooks(False) is not None,
                 torch._C._autograd._saved_tensors_hooks_is_enabled())
    assert after == before  # the notebook's own state is put back


def test_the_wire_never_calls_a_tensor_subclass_method():
    from grader.boundary import wire

    lie = torch.ones(3, dtype=torch.float64).as_subclass(_Lie)
    assert wire.encode(lie)["data"] == [1.0, 1.0, 1.0]


def test_graded_code_may_not_subclass_tensor_or_ndarray():
    from tests.test_policy import refused

    for base in ("torch.Tensor", "numpy.ndarray", "torch.nn.Parameter"):
        error = refused(f"import torch\nimport numpy\nclass Mine({base}):\n    pass\n")
        assert "subclass of" in str(error) and ("torch.Tensor" in str(error) or "numpy.ndarray" in str(error))
