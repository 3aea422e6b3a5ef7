"""The one registry of the course's checks: every other table that names checks is derived from it or tested
against it (tests/test_registry.py).

A check is called by test cells and by students as ``<facade>.<public>(...)`` (``checks.first_derivatives(
"square", Square.apply)``, ``basics.check_vjp(vector_jacobian_product)``), observed in the sandbox by its engine's
observer and judged on the trusted side by its engine's judge, both under the check's ``name``:

- engine ``custom_functions``: any custom-Function exercise of ``grader.spec.exercises`` (the exercise is the call's
  first argument); observers in ``grader.sandboxed.observe.OBSERVERS``, judges in
  ``grader.judge.custom_functions.JUDGES``.
- engine ``basics``: the plain functions of notebooks 1 and 4 (one exercise per check); observers and judges in the
  table ``grader.basics.CHECKS``.

A new custom-Function exercise needs no entry here: one entry in ``grader.spec.exercises.EXERCISES`` is enough
(docs/design.md, "To add an exercise"). A new *kind* of check is an entry here plus its observer and its judge.
"""

from __future__ import annotations

from dataclasses import dataclass

CUSTOM_FUNCTIONS, BASICS = "custom_functions", "basics"


@dataclass(frozen=True)
class Check:
    name: str  # the engine's name, in findings and ✓ lines: "first derivatives", "check_vjp"
    facade: str  # the module test cells import it from: grader.<facade>
    public: str  # the function test cells call: <facade>.<public>(...)
    engine: str  # CUSTOM_FUNCTIONS or BASICS (above)
    gradchecked: bool = False  # its observation runs gradcheck / gradgradcheck on a call's first probe
    exercise: str = ""  # BASICS: the one exercise it checks (CUSTOM_FUNCTIONS: the call names it)

    @property
    def takes_exercise(self) -> bool:
        """Whether a call names the exercise first: ``checks.forward("square", Square.apply)``."""
        return self.engine == CUSTOM_FUNCTIONS


def _custom(name: str, gradchecked: bool = False) -> Check:
    return Check(name, "checks", name.replace(" ", "_"), CUSTOM_FUNCTIONS, gradchecked)


def _basics(name: str, exercise: str) -> Check:
    return Check(name, "basics", name, BASICS, exercise=exercise)


CHECKS: tuple[Check, ...] = (
    _custom("forward"),
    _custom("first derivatives", gradchecked=True),
    _custom("second derivatives", gradchecked=True),
    _custom("structure"),
    _custom("forward mode"),
    _custom("vmap"),
    _basics("check_vjp", "vjp"),
    _basics("check_vjp_keeps_grad", "vjp"),
    _basics("check_mean_gradient", "accumulate"),
    _basics("check_mean_gradient_stale", "accumulate"),
    _basics("check_mean_gradient_copy", "accumulate"),
    _basics("check_second_derivative", "secondderiv"),
    _basics("check_second_derivative_general", "secondderiv"),
    _basics("check_hvp", "hvp"),
    _basics("check_hvp_forward_over_reverse", "hvp"),
    _basics("check_penalty_value", "penalty"),
    _basics("check_penalty_gradient", "penalty"),
)

# What else a facade offers a notebook besides its checks (the policy lets a cell use these names too).
FACADE_HELPERS: dict[str, tuple[str, ...]] = {
    # `with checks.skip_if_unfinished("square"): ...`; notebooks 4 and 5's helpers (said in the notebook's language)
    "checks": ("skip_if_unfinished", "skip_while_unwritten", "note", "pasted_verdict"),
    "basics": (),
}

# --- derived tables ------------------------------------------------------------------------------------------------

FACADES: tuple[str, ...] = tuple(dict.fromkeys(c.facade for c in CHECKS))
# facade -> public name -> the check's name (what grader.judge.testcells reads a test cell with)
CHECK_FUNCTIONS: dict[str, dict[str, str]] = {f: {c.public: c.name for c in CHECKS if c.facade == f} for f in FACADES}
# the checks whose observation carries gradcheck's verdict on a call's first probe (grader.sandboxed.observe)
GRADCHECKED: frozenset[str] = frozenset(c.name for c in CHECKS if c.gradchecked)


def names(engine: str) -> tuple[str, ...]:
    """The names of an engine's checks, in the registry's order."""
    return tuple(c.name for c in CHECKS if c.engine == engine)


def public_names(facade: str) -> frozenset[str]:
    """What a notebook may call on ``grader.<facade>``: its checks and its helpers."""
    return frozenset(CHECK_FUNCTIONS[facade]) | frozenset(FACADE_HELPERS.get(facade, ()))


def takes_exercise(facade: str) -> bool:
    """Whether the checks of ``grader.<facade>`` take the exercise as their first argument."""
    return any(c.takes_exercise for c in CHECKS if c.facade == facade)


def gradchecked(check: str, position: int) -> bool:
    """Whether the observation of ``check`` on the probe at ``position`` runs gradcheck; the judge asks the same."""
    return check in GRADCHECKED and position == 0
