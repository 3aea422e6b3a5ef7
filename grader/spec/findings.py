"""A failed check's finding and how a student reads it: the one shape every check's verdict takes.

A ``Finding`` holds the mistake's id (a key of ``grader.spec.messages``), where it happened, expected versus
received on a small probe, and the fields the message templates use. ``CheckFailed`` is the ``AssertionError`` a
test cell raises; its text is ``Finding.render()``, and a notebook (or ``nbgrader validate``) shows that text alone,
never the grader's frames. Also here: which mistake the text of an exception raised by the student's code reveals
(``EXCEPTION_PATTERNS``, ``from_exception``). Both sides use these: the observer (``grader.sandboxed``) records an
error's mistake, the judge (``grader.judge.diagnosis`` re-exports them) and the self-checks raise ``CheckFailed``.
"""

from __future__ import annotations

import re
import textwrap
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from grader.spec import messages

MAX_CTX_ATTRS = 20  # tensor attributes of one ctx considered (a ctx holding 150k tensors is named by a few)


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
    # the language it is said in: the one current where the check failed (its probe and where are said in it too),
    # whenever and wherever it is rendered (IPython renders a notebook's error after the check returned)
    language: str = field(default_factory=messages.current)

    def _format(self, template: str) -> str:
        values = {"exercise": self.exercise, **self.fields}
        try:
            return template.format(**values)
        except (KeyError, IndexError, ValueError):
            return template

    @property
    def _key(self) -> str:
        """The message said: the mistake's own, or its variant for this exercise (``messages.for_exercise``)."""
        return messages.for_exercise(self.mistake, self.exercise)

    @property
    def title(self) -> str:
        return self._format(messages.message(self._key, self.language).title)

    @property
    def hint(self) -> str:
        # A hint that points at "the line shown above" has a variant for when no line is shown.
        if not self.code and f"{self.mistake}_no_line" in messages.EN:
            return self._format(messages.message(f"{self.mistake}_no_line", self.language).hint)
        return self._format(messages.message(self._key, self.language).hint)

    def render(self) -> str:
        with messages.using(self.language):
            return self._render()

    def _render(self) -> str:
        lines = ["✗ " + messages.say("verdict_line", label=check_label(self.exercise, self.check), text=self.title)]
        if self.code:
            lines.append(_labelled("label_code", self.code))
        if self.where:
            lines.append(_labelled("label_where", self.where))
        if self.probe:
            lines.append(_labelled("label_probe", self.probe))
        if self.expected is not None or self.received is not None:
            lines.append(_labelled("label_expected", self.expected))
            lines.append(_labelled("label_received", self.received))
        hint = self.hint
        if self.section:
            hint = messages.say("hint_and_section", hint=hint, section=self.section)
        lines.append(_labelled("label_hint", hint))
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
            # what the message was filled with: the class report fills the English sentence of a finding a
            # translated notebook produced (without them it showed "{cls}")
            "fields": {str(k): str(v)[:500] for k, v in {"exercise": self.exercise, **self.fields}.items()},
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


LABEL_COLUMNS = 10  # "  where:    ...": a line's text starts 10 columns after its indent


def _labelled(label: str, value: object) -> str:
    """'  where:    {value}': the label (in the current language), padded to ``LABEL_COLUMNS`` display columns."""
    text = messages.say(label)
    return f"  {text}{' ' * max(1, LABEL_COLUMNS - display_width(text))}{value}"


def display_width(text: str) -> int:
    """Columns ``text`` takes in a terminal or a notebook's monospace output: CJK characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def check_name(check: str) -> str:
    """A check as its verdict lines name it, in the notebook's language: notebook 2-5's ``forward`` ("前向" in
    Chinese), notebook 1 and 4's ``check_hvp`` as ``hvp`` (an identifier: never translated). One style in every
    label: "softplus · forward", "hvp · hvp_forward_over_reverse"."""
    name = check.removeprefix("check_")
    said = messages.TABLES.get(messages.current(), messages.EN).get("check_name_" + name.replace(" ", "_"))
    return said.title if said else name


def check_label(exercise: str, check: str) -> str:
    """'exercise · check', the head of every verdict line."""
    return f"{exercise} · {check_name(check)}"


# nbgrader validate prints each line of an error's traceback indented by 4 spaces and cuts it at 87
# characters (Validator.width = 90): the lines shown to a student are wrapped to fit whole.
RENDER_WIDTH = 83
# "  hint:     ", "  in your code: ", "  提示：    "
_LABEL = re.compile(r" {2}(?:[a-z][a-z ]*?:\s+|[^\W\d_a-zA-Z]{1,8}：\s*)")
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
        columns = display_width(line[:label.end()]) if label else 0
        indent = " " * (columns if label and columns < width // 2 else len(_HEADLINE) if k == 0 else 2)
        if display_width(line) <= width:
            rendered.append(line)
            continue
        if len(line) != display_width(line):  # wide (CJK) characters: wrapped by the columns they take
            rendered.extend(_wrap_columns(line, width, indent))
            continue
        rendered.extend(textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=True,
                                      break_on_hyphens=False) or [line[:width]])
    rendered[0] = "\x1b[0;31mAssertionError\x1b[0m" + rendered[0][len("AssertionError"):]
    return rendered


_OPENING = "（“‘《「【"


def _wrap_columns(line: str, width: int, indent: str) -> list[str]:
    """``line`` cut into lines of at most ``width`` display columns, continuations starting with ``indent``: between
    words where there are spaces, anywhere between two wide characters (Chinese has no spaces between words)."""
    tokens = re.findall(r"\s+|[^\s\u2e80-\u9fff\uff00-\uffef\u3000-\u303f]+|.", line)
    lines: list[str] = []
    current, used = "", 0
    for token in tokens:
        size = display_width(token)
        if current and used + size > width and not token.isspace():
            carried = current[-1] if current[-1] in _OPENING and current.strip() != current[-1] else ""
            lines.append(current[:len(current) - len(carried)].rstrip())  # (no line ends with an opening bracket)
            current, used = indent + carried, len(indent) + display_width(carried)
        if token.isspace() and current == indent:
            continue
        while used + size > width and len(token) > 1:  # a word longer than a whole line: cut it
            room = max(1, width - used)
            head = token[:room]
            lines.append(current + head)
            token, current, used = token[room:], indent, len(indent)
            size = display_width(token)
        current += token
        used += size
    if current.strip():
        lines.append(current.rstrip())
    return lines or [line]


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

