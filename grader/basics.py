"""The checks of notebooks 1 and 4's function exercises, as test cells call them: ``basics.check_vjp(fn)``.

One public ``check_*`` function per graded test cell (notebook 1: vjp, accumulate, secondderiv; notebook 4: hvp,
hvp_forward, penalty). Each one is exactly ``print("✓ " + judge(name, observe(name, fn, **kw), **kw))``:

- ``observe`` (``grader.sandboxed.observe_functions``) calls the student's function on small float64 probes and
  records what happened as plain data; it decides nothing;
- ``judge`` (``grader.judge.functions``) rebuilds the probes, computes PyTorch's references and returns the one-line
  summary or raises ``CheckFailed`` (an ``AssertionError``) carrying a ``Finding``: a mistake id of ``MISTAKES``,
  what was called on which probe, expected versus received, and a hint naming the section to re-read;
- ``CHECKS``, ``SECTIONS``, ``MISTAKES`` ... are the registry (``grader.spec.functions``).

This module only gives those their notebook names (and is what the sandbox's policy lets a notebook reach:
the ``check_*`` functions); nothing is defined here but the public checks. Nothing here imports nbgrader or
Jupyter, prints to stderr or lets a warning escape.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence, TypeVar

from grader.judge.diagnosis import reports_unfinished, unfinished_notice, unfinished_target
from grader.judge.functions import judge
from grader.sandboxed.observe_functions import observe
from grader.spec.findings import CheckFailed
from grader.spec.functions import CHECKS, MISTAKE_SECTIONS, MISTAKES, SECTIONS, SIGNATURES, section  # noqa: F401

__all__ = [
    "SECTIONS",
    "MISTAKES",
    "CHECKS",
    "observe",
    "judge",
    "check_vjp",
    "check_vjp_keeps_grad",
    "check_mean_gradient",
    "check_mean_gradient_stale",
    "check_mean_gradient_copy",
    "check_second_derivative",
    "check_second_derivative_general",
    "check_hvp",
    "check_hvp_forward_over_reverse",
    "check_penalty_value",
    "check_penalty_gradient",
]

_F = TypeVar("_F", bound=Callable[..., None])


def _install_kernel_rule() -> None:
    """In the student's kernel: every cell run is told what autograding would refuse in it (``kernel_rule``)."""
    from grader.sandboxed import kernel_rule

    kernel_rule.install()


_install_kernel_rule()


def _student_facing(check: _F) -> _F:
    """Raise the check's ``CheckFailed`` afresh from the check itself (short traceback, no chained context).

    In a notebook the student runs, an exercise whose released stub is untouched is reported instead
    (``diagnosis.reports_unfinished``), as ``grader.checks`` does: Restart & Run All goes on past it."""

    @functools.wraps(check)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        from grader.sandboxed import autograd_env, kernel_rule

        # the cells the functions under test depend on, under the rule autograding applies
        kernel_rule.refuse_in_self_check(*(a for a in (*args, *kwargs.values()) if callable(a)))
        try:
            with autograd_env.clean():  # observer and judge both need autograd as a fresh kernel has it
                check(*args, **kwargs)
        except CheckFailed as failure:
            finding = failure.finding
        else:
            return
        target = unfinished_target(finding)
        if target and reports_unfinished():
            print(unfinished_notice(finding, target))
            return
        raise CheckFailed(finding)

    return wrapper  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------
# notebook 1: one public check per graded test cell


@_student_facing
def check_vjp(fn: Callable[..., Any], sizes: Sequence[int] = (3,), seed: int = 0) -> None:
    """Check ``fn(f, x, v)`` returns vᵀJ (J = Jacobian of f at x) on three probe functions per size.

    Probes: an elementwise f, a matrix map to a longer vector and a 2-D input.
    """
    kw = {"sizes": sizes, "seed": seed}
    print("✓ " + judge("check_vjp", observe("check_vjp", fn, **kw), **kw))


@_student_facing
def check_vjp_keeps_grad(fn: Callable[..., Any], sizes: Sequence[int] = (3,), seed: int = 0) -> None:
    """Check ``fn(f, x, v)`` leaves ``x.grad`` untouched (None, or the caller's stale values) and is correct."""
    kw = {"sizes": sizes, "seed": seed}
    print("✓ " + judge("check_vjp_keeps_grad", observe("check_vjp_keeps_grad", fn, **kw), **kw))


@_student_facing
def check_mean_gradient(fn: Callable[..., Any], sizes: Sequence[int] = (3,), n_batches: int = 4, seed: int = 0) -> None:
    """Check ``fn(loss_fn, w, batches)`` returns the mean-loss gradient with one backward per batch (w.grad None on entry)."""
    kw = {"sizes": sizes, "n_batches": n_batches, "seed": seed}
    print("✓ " + judge("check_mean_gradient", observe("check_mean_gradient", fn, **kw), **kw))


@_student_facing
def check_mean_gradient_stale(fn: Callable[..., Any], sizes: Sequence[int] = (3,), n_batches: int = 4, seed: int = 0) -> None:
    """Check ``fn(loss_fn, w, batches)`` is correct when ``w.grad`` holds stale values on entry."""
    kw = {"sizes": sizes, "n_batches": n_batches, "seed": seed}
    print("✓ " + judge("check_mean_gradient_stale", observe("check_mean_gradient_stale", fn, **kw), **kw))


@_student_facing
def check_mean_gradient_copy(fn: Callable[..., Any], sizes: Sequence[int] = (3,), n_batches: int = 4, seed: int = 0) -> None:
    """Check the tensor ``fn`` returns is its own copy: zeroing ``w.grad`` afterwards must not change it."""
    kw = {"sizes": sizes, "n_batches": n_batches, "seed": seed}
    print("✓ " + judge("check_mean_gradient_copy", observe("check_mean_gradient_copy", fn, **kw), **kw))


@_student_facing
def check_second_derivative(fn: Callable[..., Any], sizes: Sequence[int] = (3,), seed: int = 0) -> None:
    """Check ``fn(f, x)`` returns the elementwise f''(x) for three elementwise functions on 1-D x."""
    kw = {"sizes": sizes, "seed": seed}
    print("✓ " + judge("check_second_derivative", observe("check_second_derivative", fn, **kw), **kw))


@_student_facing
def check_second_derivative_general(fn: Callable[..., Any], sizes: Sequence[int] = (3,), seed: int = 0) -> None:
    """Check ``fn(f, x)`` works for 0-d and multi-dimensional x and leaves ``x.grad`` as it was."""
    kw = {"sizes": sizes, "seed": seed}
    print("✓ " + judge("check_second_derivative_general", observe("check_second_derivative_general", fn, **kw), **kw))


# ---------------------------------------------------------------------------------------------
# notebook 4: their probes use the notebook's own Functions (its namespace)


def _notebook_namespace() -> dict[str, Any]:
    """The notebook's variables, for a self-check run in the student's kernel (IPython's user namespace)."""
    import sys

    main = sys.modules.get("__main__")
    return dict(vars(main)) if main is not None else {}


def _public(name: str, doc: str) -> Callable[..., None]:
    @_student_facing
    def check(fn: Callable[..., Any], sizes: Sequence[int] = CHECKS[name].defaults["sizes"],
              seed: int = 0) -> None:
        kw = {"sizes": sizes, "seed": seed}
        print("✓ " + judge(name, observe(name, fn, namespace=_notebook_namespace(), **kw), **kw))

    check.__name__ = check.__qualname__ = name
    check.__doc__ = doc
    return check


check_hvp = _public("check_hvp", "Check ``hvp(f, x, v)`` returns H v by double backward (H: f's Hessian at x).")


check_hvp_forward_over_reverse = _public(
    "check_hvp_forward_over_reverse", "Check ``hvp_forward(f, x, v)`` returns H v by forward-over-reverse.")


check_penalty_value = _public("check_penalty_value", "Check ``gradient_penalty(f, w, x)``'s value.")


check_penalty_gradient = _public(
    "check_penalty_gradient", "Check the gradient of ``gradient_penalty(f, w, x)`` with respect to w.")
