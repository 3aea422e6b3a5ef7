"""The graded rule, applied in the student's own kernel (issue 29, item 5): a ✓ from a self-check, or from nbgrader's
Validate, means the same points when autograded.

- **When a cell runs** (IPython's ``pre_run_cell``, registered when a notebook imports ``grader.checks`` or
  ``grader.basics``): a cell the student wrote or changed that the course's policy would refuse gets one line saying
  so (the construct, its line), and runs as usual. Whether it costs anything depends on what uses it: a playground
  cell (``grader.sandboxed.playground``) costs nothing.
- **When a self-check runs** (``refuse_in_self_check``, called by ``grader.checks`` and ``grader.basics``): every
  cell the answer under test depends on (the cells defining it, and transitively the cells that last bound a name one
  of them reads, as the kernel ran them) is compiled under the policy; a refusal fails the self-check with the
  policy's message, naming the cell, as autograding would (there the refused cell does not run, and the answer fails).

The instructor's cells (byte-identical to a cell of the course's released or solutions notebooks) run as they are in
grading, and are not checked here either. Nothing here runs in the grading sandbox (``grader.sandboxed.child``).
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any, Iterable

from grader.sandboxed import playground

_INSTALLED: list[Any] = []  # the shell the hook is registered on


def in_sandbox() -> bool:
    return "grader.sandboxed.child" in sys.modules or "grader.sandboxed.worker" in sys.modules


def _shell() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def install() -> None:
    """Register the hook on the running IPython shell (once; never in the grading sandbox, never outside IPython)."""
    if in_sandbox():
        return
    shell = _shell()
    if shell is None or any(s is shell for s in _INSTALLED):
        return
    try:
        shell.events.register("pre_run_cell", _before_cell)
    except Exception:  # noqa: BLE001 (an IPython without events: the self-checks still check)
        return
    _INSTALLED.append(shell)


@functools.lru_cache(maxsize=1)
def instructor_sources() -> frozenset[str]:
    """The code cells of the course's notebooks (released and solutions) next to this package, when they are there."""
    root = Path(__file__).resolve().parents[2]
    found: set[str] = set()
    for folder in ("notebooks", "solutions", "source", "release"):
        for path in sorted((root / folder).glob("*/*.ipynb")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except Exception:  # noqa: BLE001
                continue
            for cell in data.get("cells", []):
                if cell.get("cell_type") == "code":
                    source = cell.get("source", "")
                    found.add("".join(source) if isinstance(source, list) else str(source))
    return frozenset(found)


def _instructors(source: str) -> bool:
    return source in instructor_sources() or source.rstrip("\n") in instructor_sources()


def refusals(source: str) -> list[tuple[int | None, str]]:
    """The policy's objections to a cell as the student wrote it (IPython's magics as IPython runs them)."""
    from grader.sandboxed import policy

    return policy.check(playground._python(source) or source)


def _before_cell(info: Any = None) -> None:
    source = getattr(info, "raw_cell", None)
    if not isinstance(source, str) or not source.strip() or _instructors(source):
        return
    try:
        found = refusals(source)
    except Exception:  # noqa: BLE001 (the hook never stops a cell)
        return
    if found:
        from grader.spec.messages import say

        line, what = found[0]
        print(say("kernel_refused_cell", line=line if line is not None else "?", what=_one_line(what)))


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _history(shell: Any) -> list[str]:
    """The cells the kernel ran, in order (IPython's own record of raw inputs)."""
    raw = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    return [s for s in raw if isinstance(s, str)] if isinstance(raw, list) else []


def dependencies(roots: Iterable[str], history: list[str], extra_reads: Iterable[str] = ()) -> list[str]:
    """The cells (sources) the ``roots`` depend on: the roots, and for every name one of them reads, the last cell
    of ``history`` that bound it, transitively (the kernel's state: a cell run again, or edited and run, replaces
    its earlier runs). Cells that may bind anything (``from m import *``) are in, as in grading."""
    latest: dict[str, str] = {}
    anything: list[str] = []
    for source in history:
        bound = playground.names(source).binds
        for name in bound:
            latest[name] = source
        if playground.EVERYTHING in bound:
            anything.append(source)
    found: list[str] = []
    pending = [*roots, *anything, *(latest[n] for n in extra_reads if n in latest)]
    wanted: set[str] = set(extra_reads)
    while pending:
        source = pending.pop(0)
        if source in found:
            continue
        found.append(source)
        for name in sorted(playground.names(source).reads - wanted):
            wanted.add(name)
            if name in latest:
                pending.append(latest[name])
    return found


def refuse_in_self_check(*objects: Any) -> None:
    """A self-check refuses, with the policy's message (PolicyError), as autograding would: the cells defining the
    objects under test, then every cell they depend on (``dependencies``) that is the student's."""
    from grader.sandboxed import policy
    from grader.spec.messages import say

    policy.refuse_in_self_check(*objects)  # the cells that define them: the message names the object
    shell = _shell()
    if shell is None or in_sandbox():
        return
    import linecache

    history = _history(shell)
    roots = [history[-1]] if history else []  # the cell running the self-check (it names what it checks)
    for obj in objects:
        for filename in policy._cell_files(obj):
            roots.append("".join(linecache.getlines(filename)))
    for source in dependencies(roots, history, playground.grader_reads()):
        if _instructors(source):
            continue
        found = refusals(source)
        if found:
            line, what = found[0]
            first = next((text.strip() for text in source.splitlines() if text.strip()), "")
            first = first if len(first) <= 60 else first[:59] + "…"
            raise policy.PolicyError(say("self_check_refused_cell", what=_one_line(what), cell=first), line)
