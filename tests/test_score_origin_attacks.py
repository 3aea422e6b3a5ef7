"""Attacks on issue 29's "what a score is made of" (tests/test_score_origin.py's design), in-process and fast: each
student of the adversarial class ``trust3b`` (tests/adversarial/trust3b-*.py) whose attack can be shown without
nbgrader, its answer cell compiled and run under the course's policy (as ``grader.sandboxed.child`` runs a graded
cell), then the exercise's checks run as a self-check runs them (observer and judge in this process).

The attacks earn derivative points with derivatives PyTorch computed, none the student wrote, without ever starting
the autograd engine inside a backward (which is all ``grader.sandboxed.autograd_env``'s watch sees): forward-mode AD
(``forward_ad`` dual tensors, ``torch.func.jvp``, ``torch.func.jacfwd``), a recomputed output's ``grad_fn`` node
called directly, or the engine started in ``forward`` instead of ``backward``. The victim leaves a forward-AD dual
level open (``autograd_env.clean()`` closes it for each check). An attack that succeeds is marked
``xfail(strict=True)`` (none today): the suite stays green while documenting the hole, and turns red (XPASS) once it
is closed, so the marker is removed with the fix.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
import torch

from grader import checks
from grader.spec.findings import CheckFailed
from tests.test_policy import run_cell

CASES = Path(__file__).resolve().parent / "adversarial"
NOTEBOOK_CHECKS = ("forward", "first_derivatives", "second_derivatives", "structure")
SOFTPLUS_CHECKS = (*NOTEBOOK_CHECKS, "forward_mode", "vmap")


def _answer(case: str) -> str:
    """The answer cell a student of tests/adversarial/ hands in (the file without its header)."""
    lines = (CASES / f"{case}.py").read_text(encoding="utf-8").splitlines()
    start = next(k for k, line in enumerate(lines) if not line.startswith("#"))
    return "\n".join(lines[start:]) + "\n"


def _outcomes(source: str, exercise: str, name: str, names: tuple[str, ...], setup: str = "") -> dict[str, str]:
    """Each check's outcome ('pass' or the mistake id) for the function ``name`` defined by ``source``, compiled under
    the course's policy in a fresh notebook namespace (``setup`` run first, as an earlier cell)."""
    ns = run_cell("import torch\n" + setup)
    run_cell("import torch\n" + source, ns)
    fn = ns[name.split(".")[0]]
    for part in name.split(".")[1:]:
        fn = getattr(fn, part)
    got = {}
    for check in names:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                getattr(checks, check)(exercise, fn)
            got[check] = "pass"
        except CheckFailed as failure:
            got[check] = failure.finding.mistake
    return got


def _hole(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=reason)


# Closed (the marks went): forward mode in backward or jvp (forward_ad.make_dual / enter_dual_level are watched as
# the engine is), the engine in forward (every call of the student's code is watched, not only backward), a dual
# level left open (autograd_env.clean closes it for the check), a grad_fn node called directly (graded code gets
# graph nodes as views to look at: grader.sandboxed.graph_nodes).
ATTACKS = {
    # case: (exercise, function, checks, checks that must not pass, marks)
    "trust3b-backward-forward-ad": ("square", "Square.apply", NOTEBOOK_CHECKS,
                                    ("first_derivatives", "second_derivatives"),
                                    None),
    "trust3b-backward-func-jvp": ("square", "Square.apply", NOTEBOOK_CHECKS,
                                  ("first_derivatives", "second_derivatives"),
                                  None),
    "trust3b-backward-gradfn-call": ("square", "Square.apply", NOTEBOOK_CHECKS,
                                     ("first_derivatives", "second_derivatives"),
                                     None),
    "trust3b-engine-in-forward": ("square", "Square.apply", NOTEBOOK_CHECKS,
                                  ("first_derivatives", "second_derivatives"),
                                  None),
    "trust3b-backward-functional-jvp": ("square", "Square.apply", NOTEBOOK_CHECKS,
                                        ("first_derivatives", "second_derivatives"), None),
    "trust3b-sinh-jacfwd": ("sinh", "sinh", NOTEBOOK_CHECKS, ("first_derivatives", "second_derivatives"),
                            None),
    "trust3b-linear-jacfwd": ("linear", "LinearFunction.apply", NOTEBOOK_CHECKS,
                              ("first_derivatives", "second_derivatives"),
                              None),
    "trust3b-softplus-jvp-by-torch": ("softplus", "Softplus.apply", SOFTPLUS_CHECKS, ("forward_mode",),
                                      None),
    "trust3b-softplus-all-by-torch": ("softplus", "Softplus.apply", SOFTPLUS_CHECKS,
                                      ("first_derivatives", "second_derivatives", "forward_mode"),
                                      None),
}


@pytest.mark.parametrize("case", [pytest.param(name, marks=() if spec[4] is None else spec[4])
                                  for name, spec in ATTACKS.items()])
def test_derivatives_pytorch_computed_earn_no_derivative_points(case):
    exercise, name, names, must_fail, _ = ATTACKS[case]
    got = _outcomes(_answer(case), exercise, name, names)
    earned = [check for check in must_fail if got[check] == "pass"]
    assert not earned, f"{case}: {got}"


def _victim_setup() -> str:
    """What trust3b-z-dual-level-left-open's playground cell adds: a dual level entered and never exited."""
    header = (CASES / "trust3b-z-dual-level-left-open.py").read_text(encoding="utf-8")
    assert re.search(r"fwAD\.enter_dual_level\(\)", header)
    return "import torch.autograd.forward_ad as fwAD\nfwAD.enter_dual_level()\n"


def test_a_dual_level_left_open_costs_a_correct_softplus_nothing():
    from torch.autograd import forward_ad

    solution = _answer("trust3b-softplus-jvp-by-torch").replace(
        "        try:\n            return torch.func.jvp(F.softplus, (x,), (x_t,))[1]\n", "        return x_t * torch.sigmoid(x)\n")
    solution = solution.split("        except RuntimeError:")[0]
    assert "return x_t * torch.sigmoid(x)" in solution
    try:
        got = _outcomes(solution, "softplus", "Softplus.apply", SOFTPLUS_CHECKS, setup=_victim_setup())
    finally:
        with contextlib.suppress(RuntimeError):
            forward_ad.exit_dual_level()
    assert got == dict.fromkeys(SOFTPLUS_CHECKS, "pass")


def test_the_honest_softplus_of_the_victim_is_right_when_no_level_is_left_open():
    solution = _answer("trust3b-softplus-jvp-by-torch").replace(
        "        try:\n            return torch.func.jvp(F.softplus, (x,), (x_t,))[1]\n", "        return x_t * torch.sigmoid(x)\n")
    solution = solution.split("        except RuntimeError:")[0]
    assert _outcomes(solution, "softplus", "Softplus.apply", SOFTPLUS_CHECKS) == dict.fromkeys(SOFTPLUS_CHECKS, "pass")
    assert torch.is_grad_enabled()


LOOKUP_SQUARE = '''
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        known = TABLE.get(tuple(round(v, 9) for v in x.detach().flatten().tolist()))
        if known is None:
            return grad_out * x  # the student's own derivative: the factor 2 is missing
        return grad_out * known.to(x.dtype)
'''


def test_derivatives_looked_up_for_known_probe_values_earn_no_derivative_points():
    """The probes' generation is public (grader.spec ships with the self-checks) and so are the test cells' seeds:
    a cell can compute PyTorch's derivative for every probe value in advance (autograd used in the student's own
    cell, not inside backward, where nothing watches) and have backward look it up, returning its own wrong
    derivative elsewhere. One probe of every check is drawn anew for each run (``Exercise.probes``'s ``draw``),
    so a backward that is right only on values known in advance fails the first-derivative check."""
    from grader.spec.exercises import get

    ex = get("square")
    table = {}
    for seed in range(3):  # the seeds a test cell might use, and the default
        for probe in ex.probes(ex.default_shapes, seed):
            (x,) = probe.fresh()
            (grad,) = torch.autograd.grad((x * x).sum(), x)  # PyTorch's derivative, in the student's own cell
            table[tuple(round(v, 9) for v in x.detach().flatten().tolist())] = grad.detach()
    ns = run_cell("import torch\nTABLE = {}")
    ns["TABLE"].update(table)
    run_cell("import torch\n" + LOOKUP_SQUARE, ns)
    outcomes = {}
    for attempt in range(3):  # each self-check draws its own probe
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                checks.first_derivatives("square", ns["Square"].apply)
            outcomes[attempt] = "pass"
        except CheckFailed as failure:
            outcomes[attempt] = failure.finding.mistake
    assert "pass" not in outcomes.values(), outcomes
