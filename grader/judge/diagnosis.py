"""What the student did wrong, and how to say it.

A failed check produces a ``Finding``: the mistake's id (a key of
``grader.spec.messages``), where it happened, expected versus received on a small
probe, and the fields the message templates use. ``CheckFailed`` is the
``AssertionError`` a test cell raises; its text is ``Finding.render()``, and a
notebook (or ``nbgrader validate``) shows that text alone, never the grader's frames.
"""

from __future__ import annotations

import inspect
import linecache
import os
import re
import textwrap
import traceback
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import torch

from grader.spec import messages

GRADER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # grader/, every layer
TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))


@dataclass
class Finding:
    exercise: str
    check: str  # "forward", "first derivatives", ...
    mistake: str  # key in grader.spec.messages
    probe: str = ""
    where: str = ""
    expected: str | None = None
    received: str | None = None
    section: str = ""
    fields: dict[str, Any] = field(default_factory=dict)
    code: str = ""  # the student's line that raised, if any

    def _format(self, template: str) -> str:
        values = {"exercise": self.exercise, **self.fields}
        try:
            return template.format(**values)
        except (KeyError, IndexError, ValueError):
            return template

    @property
    def title(self) -> str:
        return self._format(messages.message(self.mistake).title)

    @property
    def hint(self) -> str:
        # A hint that points at "the line shown above" has a variant for when no line is shown.
        if not self.code and f"{self.mistake}_no_line" in messages.EN:
            return self._format(messages.message(f"{self.mistake}_no_line").hint)
        return self._format(messages.message(self.mistake).hint)

    def render(self) -> str:
        lines = [f"✗ {check_label(self.exercise, self.check)}: {self.title}"]
        if self.code:
            lines.append(f"  in your code: {self.code}")
        if self.where:
            lines.append(f"  where:    {self.where}")
        if self.probe:
            lines.append(f"  probe:    {self.probe}")
        if self.expected is not None or self.received is not None:
            lines.append(f"  expected: {self.expected}")
            lines.append(f"  received: {self.received}")
        hint = self.hint
        if self.section:
            hint += f" (See section {self.section}.)"
        lines.append(f"  hint:     {hint}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {
            "exercise": self.exercise,
            "check": self.check,
            "mistake": self.mistake,
            "title": self.title,
            "where": self.where,
            "probe": self.probe,
            "expected": self.expected,
            "received": self.received,
            "hint": self.hint,
        }


class CheckFailed(AssertionError):
    """Raised by a check; the message is what the student reads.

    In a notebook the student sees the diagnosis alone: IPython renders an exception that defines
    ``_render_traceback_`` with the lines it returns, instead of the frames (the grader's) it went through.
    ``str()`` stays the whole diagnosis (nbgrader keeps it as the error output's ``evalue``)."""

    def __init__(self, finding: Finding):
        self.finding = finding
        super().__init__("\n" + finding.render())

    def __str__(self) -> str:  # keep the message readable in a notebook traceback
        return "\n" + self.finding.render()

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for this exception: 'AssertionError: ✗ …' and the diagnosis, no frame."""
        try:
            return student_traceback(self.finding.render())
        except Exception:  # never let IPython fall back to the grader's frames
            text = self.args[0] if self.args and isinstance(self.args[0], str) else "the check failed."
            return student_traceback(text)


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


def check_name(check: str) -> str:
    """A check as its verdict lines name it: notebook 2-4's ``forward``, notebook 1 and 4's ``check_hvp`` as ``hvp``
    (one style in every label: "softplus · forward", "hvp · hvp_forward_over_reverse")."""
    return check.removeprefix("check_")


def check_label(exercise: str, check: str) -> str:
    """'exercise · check', the head of every verdict line."""
    return f"{exercise} · {check_name(check)}"


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


# nbgrader validate prints each line of an error's traceback indented by 4 spaces and cuts it at 87
# characters (Validator.width = 90): the lines shown to a student are wrapped to fit whole.
RENDER_WIDTH = 83
_LABEL = re.compile(r" {2}[a-z][a-z ]*?:\s+")  # "  hint:     ", "  in your code: "
_HEADLINE = "AssertionError: ✗ "  # a headline's continuation lines start under its text


def student_traceback(text: str, width: int = RENDER_WIDTH) -> list[str]:
    """The lines of a failed check as a notebook shows them: the headline 'AssertionError: ✗ …' (the
    exception's name in red, as IPython prints it) and the diagnosis's other lines, each wrapped to ``width``
    characters, a continuation indented under its label's text. Nothing is left out."""
    lines = str(text).strip("\n").split("\n") or [""]
    rendered: list[str] = []
    for k, line in enumerate(lines):
        line = line.rstrip()
        if k == 0:
            line = "AssertionError: " + line.lstrip()
        label = _LABEL.match(line) if k else None
        indent = " " * (label.end() if label and label.end() < width // 2 else len(_HEADLINE) if k == 0 else 2)
        if len(line) <= width:
            rendered.append(line)
            continue
        rendered.extend(textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=True,
                                      break_on_hyphens=False) or [line[:width]])
    rendered[0] = "\x1b[0;31mAssertionError\x1b[0m" + rendered[0][len("AssertionError"):]
    return rendered


# --- numbers --------------------------------------------------------------------------------

RTOL, ATOL = 1e-7, 1e-9
RTOL32, ATOL32 = 1e-5, 1e-6  # float32 probes: ~100 float32 rounding steps of slack


def tolerances(dtype: torch.dtype) -> dict[str, float]:
    """rtol/atol for comparing results of a probe of ``dtype`` with PyTorch's."""
    if dtype == torch.float64:
        return {"rtol": RTOL, "atol": ATOL}
    return {"rtol": RTOL32, "atol": ATOL32}


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
    where = "[" + ", ".join(map(str, index)) + "]" if index else "(scalar)"
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


# --- exceptions raised by the student's code ---------------------------------------------------

# (pattern in the error message, mistake id); first match wins.
EXCEPTION_PATTERNS: list[tuple[str, str]] = [
    (r"returned an incorrect number of gradients \(expected (?P<n_expected>\d+), got (?P<n_received>\d+)\)",
     "wrong_number_of_gradients"),
    (r"returned a gradient different than None at position (?P<position>\d+)", "gradient_for_non_tensor"),
    (r"returned an invalid gradient at index (?P<index>\d+) - got \[(?P<got>[^\]]*)\] but expected shape "
     r"compatible with \[(?P<want>[^\]]*)\]", "wrong_gradient_shape"),
    (r"[Cc]an't call numpy\(\) on Tensor that requires grad", "numpy_on_tracked_tensor"),
    (r"modified by an inplace operation", "inplace_on_saved"),
    (r"Trying to backward through the graph a second time", "graph_freed"),
    (r"mat1 and mat2 shapes cannot be multiplied|size mismatch|must match the size", "forward_shape_error"),
    # torch.func over a custom Function (notebook 4)
    (r"must override the setup_context staticmethod", "needs_setup_context"),
    (r"does not have vmap support", "no_vmap_rule"),
    (r"^vmap: |[Dd]ata-dependent control flow|vmap over calling|Batching rule not implemented", "not_vmap_compatible"),
    (r"(?P<op>\w+)\(\): Expected dtype int[\w/]* for index", "index_not_integer"),
    # NumPy (or anything reading the data pointer) on a batched tensor of vmap, which has no storage of its own
    (r"Cannot access data pointer of Tensor that doesn't have storage", "not_vmap_compatible"),
    (r"marked with @once_differentiable", "once_differentiable"),
]


def student_line(exc: BaseException) -> str:
    """'Square.backward, line 12: return grad_out * x.numpy()' for the deepest frame outside grader/torch."""
    frames = [
        (frame, lineno)
        for frame, lineno in traceback.walk_tb(exc.__traceback__)
        if not os.path.abspath(frame.f_code.co_filename).startswith((GRADER_DIR, TORCH_DIR))
    ]
    if not frames:
        return ""
    frame, lineno = frames[-1]
    name = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
    text = linecache.getline(frame.f_code.co_filename, lineno, frame.f_globals).strip()
    return f"{name}, line {lineno}: {text}" if text else f"{name}, line {lineno}"


def from_exception(exc: BaseException, *, stage: str) -> tuple[str, dict[str, Any]]:
    """Name the mistake behind an exception raised while running the student's code."""
    text = str(exc)
    if isinstance(exc, NotImplementedError) and "implement the jvp function" in text:  # torch's, not a stub's
        return "jvp_not_implemented", {}
    if isinstance(exc, NotImplementedError):
        return "not_implemented", {}
    for pattern, mistake in EXCEPTION_PATTERNS:
        match = re.search(pattern, text)
        if match:
            fields: dict[str, Any] = dict(match.groupdict())
            fields["error"] = _short(text)
            node = re.match(r"[Ff]unction (\w+)Backward returned", text)  # the engine names the node <Class>Backward
            if node:
                fields["cls"] = node.group(1)
            return mistake, fields
    return "raised_error", {"error_type": type(exc).__name__, "error": _short(text), "stage": stage}


def _short(text: str, limit: int = 300) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"


# --- why a second derivative is missing ----------------------------------------------------------

MAX_CTX_ATTRS = 20  # tensor attributes of one ctx considered (a ctx holding 150k tensors is named by a few)
MAX_SOURCE = 100_000  # characters of a backward's source scanned (a generated 2 MB source is not read further)

SOURCE_PATTERNS: list[tuple[str, str]] = [
    # NumPy first: its idiom `.detach().numpy()` also contains a detach.
    (r"\.numpy\(|\bnp\.|numpy\.|\.item\(|\.tolist\(", "numpy_in_backward"),
    (r"\.detach\(|\.data\b", "detach_in_backward"),
    (r"no_grad\(|set_grad_enabled\(\s*False|inference_mode\(", "no_grad_in_backward"),
]


def source_of(function: Any) -> str:
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        return ""


def _tensors_in(value: Any) -> list[torch.Tensor]:
    """The tensors an attribute holds, directly or in a list/tuple/dict (one level)."""
    values: Iterable[Any] = value.values() if isinstance(value, dict) else (
        value if isinstance(value, (list, tuple)) else (value,))
    return [v for v in values if isinstance(v, torch.Tensor)]


def tensor_attributes(ctx: Any, limit: int = MAX_CTX_ATTRS) -> list[str]:
    """Names of ctx attributes that hold tensors (directly or in a list/tuple/dict); the first ``limit``."""
    names: list[str] = []
    for name, value in vars(ctx).items() if hasattr(ctx, "__dict__") else []:
        if len(names) >= limit:
            break
        if _tensors_in(value):
            names.append(f"ctx.{name}")
    return names


def tensors_without_history(ctx: Any, saved_with_history: Sequence[bool] = (), limit: int = MAX_CTX_ATTRS) -> list[str]:
    """What backward can read from ``ctx`` that autograd sees as a constant, named as backward reads it
    (``ctx.expx``, ``ctx.saved_tensors[1]``); the first ``limit``.

    Called right after forward, when every tensor input requires grad. Inputs then have history, and outputs
    have the Function's node as ``grad_fn``, however they are kept (attribute or ``save_for_backward``). A
    tensor that does not require grad was made inside forward, where grad mode is off, and is not an output:
    double backward cannot reach ``x`` through it. ``saved_with_history`` says, for each tensor forward gave
    to ``save_for_backward``, whether it required grad when it was packed (the observer's saved-tensor hook):
    reading ``ctx.saved_tensors`` here would run the unpack hooks of whoever saved them."""
    names: list[str] = []
    for name, value in vars(ctx).items() if hasattr(ctx, "__dict__") else []:
        if len(names) >= limit:
            break
        if any(not t.requires_grad for t in _tensors_in(value)):
            names.append(f"ctx.{name}")
    constants = [k for k, tracked in enumerate(saved_with_history) if not tracked]
    try:
        exact = len(saved_with_history) == len(ctx._raw_saved_tensors)  # no None saved, no pack of another node
    except Exception:
        exact = False
    if exact:
        names.extend(f"ctx.saved_tensors[{k}]" for k in constants)
    elif constants:
        names.append(f"{len(constants)} tensor{'s' if len(constants) > 1 else ''} saved with ctx.save_for_backward")
    return names[:limit]


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
