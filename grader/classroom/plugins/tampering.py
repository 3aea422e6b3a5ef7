"""What sanitizing found changed in the instructor's cells of a submission, kept as flags for the class report.

nbgrader's OverwriteCells puts back the instructor's version of a test cell a student edited (its code, its points,
its type) and adds back a deleted one, so the grade is right; it said so in a log line that names neither the student
nor the notebook, and the report never heard of it. ``OverwriteReleasedCells`` and ``ForgetUnknownCells`` note each
such change here (``note``); TrustedExecute, which grades the same notebook right after its sanitizing, in the same
nbgrader process, takes them (``taken``) and saves them with the notebook's results in grader_results/, as flags
({"cell", "what"}) beside its own: the class report's "Flagged submissions", reports/flags.csv and the count at the
end of `make autograde` / `make scores` read them all (``grader.classroom.report.flags_from_results``).

What an honest student's notebook shows is never noted: a test cell as released (its hidden tests stripped by the
release, so its checksum differs from the gradebook's), a locked cell whose only change is trailing whitespace or
blank lines at its end (an editor's doing; nothing a test runs), an answer cell's code (the student's to write),
JupyterLab's own metadata (outputs, execution counts, collapsed, tags, the kernel's name).
"""

from __future__ import annotations

from typing import Any

_NOTED: dict[tuple[str, str, str], list[dict[str, str]]] = {}  # (student, assignment, notebook) -> flags, in order

_LONGEST = 200  # characters of a cell name kept in a flag (a grade_id is the student's to write, at any length)


def _key(info: dict[str, Any]) -> tuple[str, str, str]:
    return str(info["student"]), str(info["assignment"]), str(info["notebook"])


def note(info: dict[str, Any], cell: str, what: str) -> None:
    """Flag ``cell`` (its grade_id) of the notebook nbgrader is sanitizing (``info``: resources["nbgrader"]) with
    ``what`` happened, in plain words; the same flag twice is kept once."""
    name = " ".join(str(cell).split())
    flag = {"cell": name if len(name) <= _LONGEST else name[:_LONGEST] + "...", "what": what}
    found = _NOTED.setdefault(_key(info), [])
    if flag not in found:
        found.append(flag)


def taken(info: dict[str, Any]) -> list[dict[str, str]]:
    """The flags noted while this notebook was sanitized, no longer kept here ([] when none)."""
    return _NOTED.pop(_key(info), [])


def same_but_trailing_whitespace(submitted: str, released: str) -> bool:
    """Whether two cells' sources differ at most by whitespace at the ends of lines and blank lines at the end:
    what an editor's "trim trailing whitespace" or "final newline" changes. Indentation is not whitespace here (it
    is Python's syntax)."""
    def trimmed(source: str) -> list[str]:
        lines = [line.rstrip() for line in source.split("\n")]
        while lines and not lines[-1]:
            lines.pop()
        return lines

    return trimmed(submitted) == trimmed(released)
