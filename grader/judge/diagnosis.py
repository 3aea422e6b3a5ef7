"""What the student did wrong, and how to say it.

A failed check produces a ``Finding`` (``grader.spec.findings``, re-exported here with ``CheckFailed``): the
mistake's id, where it happened, expected versus received on a small probe. Here: how an unfinished exercise is
reported, comparing numbers and naming how they differ, and why a second derivative is missing.
"""

from __future__ import annotations

import os
import re
from typing import Any

import torch

from grader.spec import messages
from grader.spec.tolerances import ATOL, ATOL32, RTOL, RTOL32, tolerances  # noqa: F401 (diagnosis.<name>)
# The finding and its rendering, and what an exception's text reveals, live in spec (both sides use them): the
# judge's and the checks' names for them stay these.
from grader.spec.findings import (EXCEPTION_PATTERNS, MAX_CTX_ATTRS, RENDER_WIDTH, CheckFailed, Finding,  # noqa: F401
                                  _short, check_label, check_name, from_exception, student_traceback)


# --- an exercise not written yet ------------------------------------------------------------------------

# The message of a released stub (grader.classroom.nbgrader_plugins.NamedStubs): "exercise 'square': write Square.backward".
_STUB = re.compile(r"exercise '(?P<exercise>[\w-]+)': write (?P<target>[\w.]+)")


def stub_target(message: str, exercise: str) -> str:
    """'Square.backward' when ``message`` is what the released stub of ``exercise`` raises; else ''."""
    match = _STUB.search(str(message))
    return match.group("target") if match and match.group("exercise") == exercise else ""


def unfinished_target(finding: Finding) -> str:
    """What is left to write when a check failed only because its exercise's stub is untouched; else ''."""
    if finding.mistake != "not_implemented":
        return ""
    return stub_target(str(finding.fields.get("error", "")), finding.exercise)


def reports_unfinished() -> bool:
    """Whether a self-check reports an untouched stub (``unfinished_notice``) instead of raising.

    Only in a notebook a student runs, so that Restart & Run All goes on past an exercise not written yet:
    never when nbgrader runs the notebook (``nbgrader validate`` and ``autograde`` set NBGRADER_EXECUTION in
    the kernel's environment, and an untouched exercise must fail there), and never outside IPython (tests,
    scripts). Trusted grading never runs test cells: it judges observations, so this changes no score."""
    if os.environ.get("NBGRADER_EXECUTION"):
        return False
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None


def unfinished_notice(finding: Finding, target: str) -> str:
    """Two lines a self-check prints for an exercise not written yet: what is missing and what to do."""
    fields = {**finding.fields, "exercise": finding.exercise, "check": check_name(finding.check), "target": target}
    note = messages.message("unfinished_exercise")
    return f"○ {note.title.format(**fields)}\n  {note.hint.format(**fields)}"


def passed_line(exercise: str, check: str, summary: str, count: int) -> str:
    """A passed check's line: '✓ square · forward: x² matches PyTorch on 4 probes'."""
    said = messages.say("passed_probes" if count != 1 else "passed_one_probe", summary=summary, count=count)
    return "✓ " + messages.say("verdict_line", label=check_label(exercise, check), text=said)


# --- numbers --------------------------------------------------------------------------------


def close(a: torch.Tensor, b: torch.Tensor, rtol: float = RTOL, atol: float = ATOL) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a.double(), b.double(), rtol=rtol, atol=atol))


def fmt_number(x: float) -> str:
    return f"{x:.6g}"


def worst_element(expected: torch.Tensor, received: torch.Tensor, digits: int = 6) -> tuple[str, str, str]:
    """(index, expected value, received value) at the largest difference, with ``digits`` significant digits."""
    diff = (expected.double() - received.double()).abs()
    flat = int(torch.argmax(diff.reshape(-1))) if diff.numel() else 0
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), diff.shape)) if diff.dim() else ()
    e = expected.reshape(-1)[flat].item() if expected.numel() else float("nan")
    r = received.reshape(-1)[flat].item() if received.numel() else float("nan")
    where = "[" + ", ".join(map(str, index)) + "]" if index else messages.say("scalar")
    return where, f"{e:.{digits}g}", f"{r:.{digits}g}"


def _nice_factor(c: float) -> str:
    for denominator in (1, 2, 3, 4, 6):
        numerator = c * denominator
        if abs(numerator - round(numerator)) < 1e-6:
            n = int(round(numerator))
            return str(n) if denominator == 1 else f"{n}/{denominator}"
    return fmt_number(c)


def relate(
    expected: torch.Tensor,
    received: torch.Tensor,
    *,
    without_grad_output: torch.Tensor | None = None,
    rtol: float = RTOL,
    atol: float = ATOL,
) -> tuple[str, dict[str, Any]]:
    """Name how ``received`` differs from ``expected`` (same shape), as (mistake id, fields)."""
    e, r = expected.double().detach(), received.double().detach()
    tol = {"rtol": rtol, "atol": atol}
    if not bool(torch.all(e == 0)) and bool(torch.all(r.abs() < atol)):
        return "zero_gradient", {}
    if close(r, -e, **tol):
        return "wrong_sign", {}
    if without_grad_output is not None and close(r, without_grad_output.double(), **tol):
        return "forgot_grad_output", {}
    denom = float((e * e).sum())
    if denom > 0:
        c = float((r * e).sum()) / denom
        if abs(c - 1) > 1e-6 and abs(c) > 1e-6 and close(r, c * e, **tol):
            return "scaled_gradient", {"factor": _nice_factor(c)}
    if e.dim() == 2 and e.shape[0] == e.shape[1] and close(r, e.t(), **tol):
        return "transposed_gradient", {"received_shape": tuple(r.shape), "expected_shape": tuple(e.shape)}
    return "", {}


# --- why a second derivative is missing ----------------------------------------------------------

MAX_SOURCE = 100_000  # characters of a backward's source scanned (a generated 2 MB source is not read further)

SOURCE_PATTERNS: list[tuple[str, str]] = [
    # NumPy first: its idiom `.detach().numpy()` also contains a detach.
    (r"\.numpy\(|\bnp\.|numpy\.|\.item\(|\.tolist\(", "numpy_in_backward"),
    (r"\.detach\(|\.data\b", "detach_in_backward"),
    (r"no_grad\(|set_grad_enabled\(\s*False|inference_mode\(", "no_grad_in_backward"),
]


_ATTRIBUTE = re.compile(r"ctx\.[^\W\d]\w*")
_SOURCE_SCAN = re.compile("|".join(
    [r"\bctx\.(?P<attr>[^\W\d]\w*)"] + [f"(?P<k{k}>{pattern})" for k, (pattern, _) in enumerate(SOURCE_PATTERNS)]))


def capped_names(names: Any, limit: int = MAX_CTX_ATTRS) -> list[str]:
    """At most ``limit`` names, as strings (observations may hold anything)."""
    if not isinstance(names, (list, tuple)):
        return []
    return [str(n)[:100] for n in names[:limit]]


def name_list(names: list[str], shown: int = 5) -> str:
    """'ctx.a, ctx.b and 3 more' for a message."""
    if len(names) <= shown:
        return ", ".join(names)
    return ", ".join(names[:shown]) + f" and {len(names) - shown} more"


def why_untracked_source(source: str, without_history: list[str] | None = None) -> tuple[str, dict[str, Any]]:
    """Name why autograd could not record a backward (used when a second derivative is missing), from its source
    code and what it can read from ctx that has no history (``tensors_without_history``). One pass over at most
    MAX_SOURCE characters.

    The first cause is a tensor made inside forward that is not an output (SinhBad's intermediates): however it
    is kept, it has no history. A tensor kept on ctx that is an input or an output is not a cause: it has its
    history (its attribute costs the structure point, not this one)."""
    constants = capped_names(without_history or [])
    used_names: set[str] = set()
    kinds: set[int] = set()
    for match in _SOURCE_SCAN.finditer(str(source)[:MAX_SOURCE]):
        if match.group("attr") is not None:
            used_names.add("ctx." + match.group("attr"))
        else:
            kinds.add(next(k for k in range(len(SOURCE_PATTERNS)) if match.group(f"k{k}") is not None))
    if not str(source).strip():  # source unreadable (e.g. defined with exec): every such tensor is a suspect
        used = constants
    else:  # attributes are read by name; saved tensors (any other name) through ctx.saved_tensors
        used = [c for c in constants if c in used_names or not _ATTRIBUTE.fullmatch(c)]
    if used:
        return "intermediates_not_outputs", {"tensors": name_list(used)}
    for k, (_, mistake) in enumerate(SOURCE_PATTERNS):  # in the table's order: NumPy before detach
        if k in kinds:
            return mistake, {}
    return "untracked_backward", {}
