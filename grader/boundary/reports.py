"""The schema of a notebook's report lines: what each event may hold, checked before the trusted side reads a field.

A line the receiver kept is signed by the observer (``grader.boundary.channel``), but signed is not well formed: an
observer of another version, a bug of ours, or a notebook that reached the observer's closure can send
``{"event": "done", "index": [1]}``, and a field read as if it had its type then raises in the trusted process
(an unhashable index as a dict key), which nbgrader took as the student's failure and removed the submission.
``check`` names what is wrong with a decoded line (``ReportError``), so that the runner can set the notebook
aside as "not graded: grader error" instead; the events are the ones ``grader.sandboxed.child`` sends:

    start     {"index": int}
    done      {"index": int, "outputs": [dict, ...], "error": str, "line": int, "code": str}
    observed  {"index": int, "calls": [{"observations": [dict, ...]} or {"error": str}, ...], "restored": [str, ...]}

(``outputs``, ``error``, ``line``, ``code`` and ``restored`` may be left out: none, no error, nothing restored; a
field that is there has its type.)
    flag      {"index": int or null, "what": str}

What an output or an observation holds inside is judged later (``grader.judge.outputs``, ``grader.boundary.wire``): a
student's function can produce observations the judge refuses, which fails that check; only the envelope is here.
"""

from __future__ import annotations

from typing import Any, Callable

MAX_INDEX = 1_000_000  # plan positions: a notebook has a few hundred cells at most
MAX_LINE = 10_000_000  # a line number in a cell
MAX_ITEMS = 100_000  # outputs, calls, observations, restored names in one report


class ReportError(ValueError):
    """A report line that does not have the shape its event promises (the message says which field, and why)."""


def _integer(value: Any, low: int, high: int) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"must be an integer, not {_kind(value)}"
    return "" if low <= value <= high else f"must be between {low} and {high:,}, not {_clip(value)}"


def index(value: Any) -> str:
    return _integer(value, 0, MAX_INDEX)


def index_or_none(value: Any) -> str:
    return "" if value is None else index(value)


def line_number(value: Any) -> str:
    return "" if value is None else _integer(value, 0, MAX_LINE)


def text(value: Any) -> str:
    return "" if isinstance(value, str) else f"must be a string, not {_kind(value)}"


def text_or_none(value: Any) -> str:
    return "" if value is None else text(value)


def list_of(item: Callable[[Any], str]) -> Callable[[Any], str]:
    """A list (of at most MAX_ITEMS) whose every item passes ``item``."""
    def check_list(value: Any) -> str:
        if not isinstance(value, list):
            return f"must be a list, not {_kind(value)}"
        if len(value) > MAX_ITEMS:
            return f"must have at most {MAX_ITEMS:,} items, not {len(value):,}"
        for position, one in enumerate(value):
            why = item(one)
            if why:
                return f"item {position} {why}"
        return ""
    return check_list


def an_object(value: Any) -> str:
    return "" if isinstance(value, dict) else f"must be an object, not {_kind(value)}"


def call(value: Any) -> str:
    """One check call's answer: its observations (one object per probe), or why the observer could not make them."""
    if not isinstance(value, dict):
        return f"must be an object, not {_kind(value)}"
    if set(value) == {"observations"}:
        return _field("observations", list_of(an_object)(value["observations"]))
    if set(value) == {"error"}:
        return _field("error", text(value["error"]))
    return f"must have exactly one field, 'observations' or 'error', not {_names(value)}"


# event -> field -> (required, what its value must be)
SCHEMA: dict[str, dict[str, tuple[bool, Callable[[Any], str]]]] = {
    "start": {"index": (True, index)},
    "done": {"index": (True, index), "outputs": (False, list_of(an_object)), "error": (False, text),
             "line": (False, line_number), "code": (False, text_or_none)},
    "observed": {"index": (True, index), "calls": (True, list_of(call)), "restored": (False, list_of(text))},
    "flag": {"index": (True, index_or_none), "what": (True, text)},
}


def check(entry: Any) -> dict[str, Any]:
    """``entry`` (one decoded report line) when it has its event's shape; else raises ``ReportError`` saying why."""
    if not isinstance(entry, dict):
        raise ReportError(f"a report must be a JSON object, not {_kind(entry)}")
    event = entry.get("event")
    fields = SCHEMA.get(event) if isinstance(event, str) else None
    if fields is None:
        raise ReportError(f"unknown event {_clip(event)} (expected one of {', '.join(SCHEMA)})")
    unknown = [name for name in entry if name != "event" and name not in fields]
    if unknown:
        raise ReportError(f"'{event}' report with unexpected field(s) {_names(unknown)}")
    for name, (required, valid) in fields.items():
        if name not in entry:
            if required:
                raise ReportError(f"'{event}' report without its field '{name}'")
            continue
        why = valid(entry[name])
        if why:
            raise ReportError(f"'{event}' report: {_field(name, why)}")
    return entry


def _field(name: str, why: str) -> str:
    return f"field '{name}' {why}" if why else ""


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _names(names: Any) -> str:
    shown = [_clip(n, 40) for n in list(names)[:5]]
    return ", ".join(shown) + (", ..." if len(names) > 5 else "")


def _clip(value: Any, limit: int = 60) -> str:
    """A short picture of a value a report holds: never the repr of a huge or deeply nested one (slow, or a
    RecursionError), never the decimal digits of a huge integer (a ValueError past 4,300 digits)."""
    if isinstance(value, bool) or value is None or isinstance(value, float):
        shown = repr(value)
    elif isinstance(value, int):
        shown = repr(value) if abs(value) < 10**18 else f"an integer of {value.bit_length()} bits"
    elif isinstance(value, str):
        shown = repr(value[:limit])
    else:
        shown = f"a {_kind(value)}"
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"
