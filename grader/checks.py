"""The checks that test cells call, one call per check; each raises ``CheckFailed`` with a diagnosis.

A thin facade: its checks are those of the registry (``grader.spec.registry``, facade ``checks``), observed by
``grader.sandboxed.observe`` and judged by ``grader.judge.custom_functions``. In a student's notebook both halves run
here, in the student's kernel (a self-check); in trusted grading the test cells are parsed, never run, and only the
judge decides (``grader.judge.runner``).

    from grader import checks
    checks.forward("square", Square.apply, shapes=[(3, 3)])
    checks.first_derivatives("square", Square.apply, shapes=[(3, 3)])
    checks.second_derivatives("square", Square.apply, shapes=[(3, 3)])
    checks.structure("square", Square.apply)
"""

from __future__ import annotations

import contextlib
import re
from typing import Any, Callable, Iterator, Sequence

from grader.judge import diagnosis as dx
from grader.judge.custom_functions import JUDGES, CheckFailed, Finding, _Judge, judge, warm_up  # noqa: F401
from grader.sandboxed import autograd_env, kernel_rule, observe
from grader.spec import messages
from grader.spec.exercises import Shape, draw_seed, get

kernel_rule.install()  # in the student's kernel: every cell run is told what autograding would refuse in it

__all__ = ["forward", "first_derivatives", "second_derivatives", "structure", "forward_mode", "vmap",
           "skip_if_unfinished", "skip_while_unwritten", "note", "pasted_verdict"]


def run_check(check: str, exercise: str, fn: Callable[..., Any], shapes: Sequence[Shape] | None, seed: int) -> None:
    """Observe and judge in this process (a student's self-check), printing a ✓ line on success.

    An exercise whose released stub is untouched fails like any mistake, except in a notebook the student
    runs (``diagnosis.reports_unfinished``): there the check prints that it is not done yet and returns, so
    that Restart & Run All reaches the end of the notebook."""
    ex = get(exercise)
    probes = ex.probes(shapes or ex.default_shapes, seed, draw=draw_seed())  # one drawn anew for each self-check
    kernel_rule.refuse_in_self_check(fn)  # the cells it depends on, under the rule autograding applies
    try:
        with autograd_env.clean():  # the judge runs here too: autograd as a fresh kernel has it, for both
            observations = observe.observe(check, ex, fn, probes)
    except Exception as exc:  # the observer guards every call into student code: this is a bug of ours
        _Judge(ex, check).fail("grader_error", error_type=type(exc).__name__, error=dx._short(str(exc)))
    try:
        with autograd_env.clean():
            summary = judge(check, exercise, probes, observations)
    except CheckFailed as failure:
        target = dx.unfinished_target(failure.finding)
        if not (target and dx.reports_unfinished()):
            raise
        print(dx.unfinished_notice(failure.finding, target))
        return
    print(dx.passed_line(ex.id, check, summary, len(probes)))


@contextlib.contextmanager
def skip_if_unfinished(exercise: str) -> Iterator[None]:
    """Run a block that uses an exercise's answer; while the exercise's released stub is untouched, stop the
    block with a one-line note instead of an error, so that Restart & Run All goes on:

        with checks.skip_if_unfinished("square"):
            print(torch.autograd.gradcheck(Square.apply, x))

    Any other error (a wrong answer's included) is raised as usual."""
    get(exercise)  # a misspelt exercise is a clear error, not a block that is never skipped
    try:
        yield
    except NotImplementedError as exc:
        target = dx.stub_target(str(exc), exercise)
        if not target:
            raise
        note("unfinished_skipped", exercise=exercise, target=target, key_is_note=False)


# The NotImplementedError of a released stub ("exercise 'softplus': write Softplus.forward") and of a paste cell left
# as released ("exercise 'own-functions': paste your Square, Exp from notebooks 3 and 4 into the cell of section 0").
_STUB = re.compile(r"exercise '([\w-]+)': write (.+)")
_PASTE = re.compile(r"exercise '[\w-]+': paste your (.+?) from ")


@contextlib.contextmanager
def skip_while_unwritten() -> Iterator[None]:
    """Like ``skip_if_unfinished`` for a block that uses several answers (notebooks 4 and 5): stops at whichever
    exercise is still its released stub, or at section 0's paste cell not pasted yet, with one line in the
    notebook's language, so that Restart & Run All goes on. Any other error is raised as usual."""
    try:
        yield
    except NotImplementedError as exc:
        stub, paste = _STUB.match(str(exc)), _PASTE.match(str(exc))
        if stub:
            note("unfinished_skipped", exercise=stub.group(1), target=stub.group(2), key_is_note=False)
        elif paste:
            note("paste_skipped", names=paste.group(1))
        else:
            raise


def note(key: str, key_is_note: bool = True, **fields: Any) -> None:
    """Print one of the course's notes (``grader.spec.messages``' ``note_<key>``, or ``key`` itself when
    ``key_is_note`` is false: a ○ line in the notebook's language) where a notebook says why a block did not run."""
    message = messages.message(f"note_{key}" if key_is_note else key)
    print("○ " + messages.say("two_sentences", first=message.title.format(**fields),
                              second=message.hint.format(**fields)).rstrip())


def pasted_verdict(ok: bool, notebooks: str) -> str:
    """'✓', or why a Function pasted into section 0 is not right yet, in the notebook's language."""
    return "✓" if ok else "✗ " + messages.say("pasted_not_right", notebooks=notebooks)


def forward(exercise: str, fn: Callable[..., Any], shapes: Sequence[Shape] | None = None, seed: int = 0) -> None:
    """The Function's output equals PyTorch's on every probe, and comes from the student's Function."""
    run_check("forward", exercise, fn, shapes, seed)


def first_derivatives(exercise: str, fn: Callable[..., Any], shapes: Sequence[Shape] | None = None, seed: int = 0) -> None:
    """backward returns one correctly shaped gradient per input, in the input's dtype, equal to PyTorch's
    (vector-Jacobian products with a random grad_output), and gradcheck passes."""
    run_check("first derivatives", exercise, fn, shapes, seed)


def second_derivatives(exercise: str, fn: Callable[..., Any], shapes: Sequence[Shape] | None = None, seed: int = 0) -> None:
    """Differentiating the student's gradient (create_graph=True) gives PyTorch's second derivatives, with
    respect to each input and to grad_output, and gradgradcheck passes."""
    run_check("second derivatives", exercise, fn, shapes, seed)


def structure(exercise: str, fn: Callable[..., Any], shapes: Sequence[Shape] | None = None, seed: int = 0) -> None:
    """A real custom Function that saves tensors with save_for_backward (none as ctx attributes); with several
    inputs, correct use of ctx.needs_input_grad and None for non-tensor arguments."""
    run_check("structure", exercise, fn, shapes, seed)


def forward_mode(exercise: str, fn: Callable[..., Any], shapes: Sequence[Shape] | None = None, seed: int = 0) -> None:
    """The Function's jvp gives PyTorch's forward-mode derivative, through torch.func.jvp and through
    torch.autograd.forward_ad dual tensors, with a random tangent."""
    run_check("forward mode", exercise, fn, shapes, seed)


def vmap(exercise: str, fn: Callable[..., Any], shapes: Sequence[Shape] | None = None, seed: int = 0) -> None:
    """torch.func.vmap over the Function equals a loop over the samples (and PyTorch), and
    vmap(grad(...)) gives PyTorch's per-sample gradients."""
    run_check("vmap", exercise, fn, shapes, seed)
