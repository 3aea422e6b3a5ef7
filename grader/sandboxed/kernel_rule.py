"""The graded rule, applied in the student's own kernel (issue 29, item 5): a ✓ from a self-check, or from nbgrader's
Validate, means the same points when autograded.

- **When a cell runs** (IPython's ``pre_run_cell``, registered when a notebook imports ``grader.checks`` or
  ``grader.basics``): a cell the student wrote or changed that the course's policy would refuse gets one line saying
  so (the construct, its line), and runs as usual. Whether it costs anything depends on what uses it: a playground
  cell (``grader.spec.playground``) costs nothing.
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

from grader.spec import playground

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
    """A cell of the course's: byte-identical to one of the notebooks next to this package, or (wherever the package
    is installed: a shared server, a laptop) to one whose digest ships with it (``grader.spec.instructor_cells``)."""
    from grader.spec import instructor_cells

    return source in instructor_sources() or source.rstrip("\n") in instructor_sources() \
        or instructor_cells.digest(source) in instructor_cells.digests()


def refusals(source: str, own: frozenset[str] = frozenset()) -> list[tuple[int | None, str]]:
    """The policy's objections to a cell as the student wrote it (IPython's magics as IPython runs them): those of
    its compile time, then what its run time refuses by name wherever the cell names it (``runtime_refusals``)."""
    from grader.sandboxed import policy

    text = playground._python(source) or source
    return policy.check(text) or runtime_refusals(text, own)


def _stops_what_follows(source: str, line: int | None, read: frozenset[str] | set[str] = frozenset({"*"})) -> bool:
    """Whether a run-time refusal at ``line`` costs what the cell defines: inside a function or a class (it runs when
    the code under test is called), or at the top level before a statement that binds a name of ``read`` (what the
    cells under test read; the cell stops there: what follows is never defined). A refused exploration after the
    definitions costs nothing, as in grading."""
    import ast

    text = playground._python(source)
    if text is None or line is None:
        return True
    body = ast.parse(text).body
    for k, node in enumerate(body):
        if node.lineno <= line <= (node.end_lineno or node.lineno):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                return True
            later = set().union(*(playground.names(ast.get_source_segment(text, n) or "").binds for n in body[k + 1:]))
            return bool(later & set(read)) or playground.EVERYTHING in later or "*" in read
    return True


def _needed_from(source: str, names: set[str]) -> set[str]:
    """The names the code under test may need ``source`` to bind: those it was needed for (``dependencies``), and what
    its own functions and classes read (they run when called; its top-level exploration's reads are not needed)."""
    import ast

    found = set(names)
    text = playground._python(source)
    if text is not None:
        for node in ast.parse(text).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found |= playground.names(ast.get_source_segment(text, node) or "").reads
    return found


def runtime_refusals(text: str, own: frozenset[str] = frozenset()) -> list[tuple[int | None, str]]:
    """What the policy's run time refuses by its name alone, read from the cell's text: an attribute it refuses on
    any object not the notebook's own (``x.register_hook``; ``own``: method names the notebook's classes define,
    not refused), and a name of a module the cell imports that the module's entry refuses or does not allow
    (``sys.modules``, ``torch.jit``). The rest (a name built at run time) is refused when the code runs."""
    import ast

    from grader.sandboxed.policy_rules import (DECIDED_WHEN_RUN, MODULE_ALLOWED_ONLY, MODULE_REFUSED,
                                               REFUSED_EVERYWHERE, _refused)

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    modules: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    modules[alias.asname] = alias.name
                else:
                    modules[alias.name.split(".")[0]] = alias.name.split(".")[0]
    found: list[tuple[int | None, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        if node.attr in REFUSED_EVERYWHERE and node.attr not in own and node.attr not in DECIDED_WHEN_RUN:
            found.append((node.lineno, str(_refused(f'".{node.attr}"'))))
        elif isinstance(node.value, ast.Name) and node.value.id in modules:
            module = modules[node.value.id]
            allowed = MODULE_ALLOWED_ONLY.get(module)
            if node.attr in MODULE_REFUSED.get(module, ()) or (allowed is not None and node.attr not in allowed):
                found.append((node.lineno, str(_refused(f"{module}.{node.attr}"))))
    return sorted(found, key=lambda item: item[0] or 0)


def _own_methods(sources: Iterable[str]) -> frozenset[str]:
    """The method names the classes of ``sources`` define (a notebook's own ``register_hook`` is its own)."""
    import ast

    found: set[str] = set()
    for source in sources:
        text = playground._python(source)
        if text is None:
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                found.update(item.name for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return frozenset(found)


def _before_cell(info: Any = None) -> None:
    source = getattr(info, "raw_cell", None)
    if not isinstance(source, str) or not source.strip() or _instructors(source):
        return
    try:
        found = refusals(source, _own_methods([source]))
    except Exception:  # noqa: BLE001 (the hook never stops a cell)
        return
    if found:
        from grader.sandboxed.policy_words import localized
        from grader.spec.messages import say

        line, what = found[0]
        print("⚠ " + say("kernel_refused_cell", line=line if line is not None else "?", what=_one_line(localized(what)).rstrip("。")))


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _history(shell: Any) -> list[str]:
    """The cells the kernel ran, in order (IPython's own record of raw inputs)."""
    raw = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    return [s for s in raw if isinstance(s, str)] if isinstance(raw, list) else []


def dependencies(roots: Iterable[str], history: list[str], extra_reads: Iterable[str] = (),
                 why: dict[str, set[str]] | None = None) -> list[str]:
    """The cells (sources) the ``roots`` depend on: the roots, and for every name one of them reads, the last cell
    of ``history`` that bound it, transitively (the kernel's state: a cell run again, or edited and run, replaces
    its earlier runs). Cells that may bind anything (``from m import *``) are in, as in grading. ``why``, when given,
    gets for each cell the names it was needed for (a root: what the first root reads, and ``extra_reads``)."""
    why = {} if why is None else why
    roots = list(roots)
    latest: dict[str, str] = {}
    anything: list[str] = []
    before: dict[str, dict[str, str]] = {}  # cell -> name -> the last cell that bound it before that cell's last run
    for source in history:
        before[source] = dict(latest)
        bound = playground.names(source).binds
        for name in bound:
            latest[name] = source
        if playground.EVERYTHING in bound:
            anything.append(source)
    found: list[str] = []
    first = set(playground.names(roots[0]).reads) if roots else set()
    pending = [*roots, *anything, *(latest[n] for n in extra_reads if n in latest)]
    for source in pending:
        why.setdefault(source, set()).update(first | set(extra_reads) | ({playground.EVERYTHING} if source in anything
                                                                        else set()))
    while pending:
        source = pending.pop(0)
        if source in found:
            continue
        found.append(source)
        cell = playground.names(source)
        for name in sorted(cell.reads):
            # what its top level reads was bound before it ran; what its functions read, when they are called (now)
            binder = (latest if name in cell.deferred or source in roots or source not in before
                      else before[source]).get(name)
            if binder is None or binder == source:
                continue
            why.setdefault(binder, set()).add(name)
            if binder not in found:
                pending.append(binder)
    return found


def refuse_in_self_check(*objects: Any) -> None:
    """A self-check refuses, with the policy's message (PolicyError), as autograding would: the cells defining the
    objects under test, then every cell they depend on (``dependencies``) that is the student's."""
    from grader.sandboxed import policy

    policy.refuse_in_self_check(*objects)  # the cells that define them: the message names the object
    shell = _shell()
    if shell is None or in_sandbox():
        return
    try:
        _refuse_dependencies(shell, objects)
    except policy.PolicyError:
        raise
    except Exception:  # noqa: BLE001 (a bug of this reading never fails a self-check: autograding decides)
        return


def _refuse_dependencies(shell: Any, objects: tuple[Any, ...]) -> None:
    import linecache

    from grader.sandboxed import policy
    from grader.sandboxed.policy_compile import check as compile_check
    from grader.spec.messages import say

    history = _history(shell)
    roots = [history[-1]] if history else []  # the cell running the self-check (it names what it checks)
    ran = {source.strip(): source for source in history}  # (linecache's text of a cell: IPython's, as it compiled it)
    for obj in objects:
        for filename in policy._cell_files(obj):
            text = "".join(linecache.getlines(filename))
            roots.append(ran.get(text.strip(), text))
    why: dict[str, set[str]] = {}
    needed = dependencies(roots, history, playground.grader_reads(), why)
    own = _own_methods(needed)
    for source in needed:
        if _instructors(source):
            continue
        found = compile_check(playground._python(source) or source) or [
            (line, what) for line, what in runtime_refusals(playground._python(source) or source, own)
            if _stops_what_follows(source, line, _needed_from(source, why.get(source, set())))]
        if found:
            line, what = found[0]
            first = next((text.strip() for text in source.splitlines() if text.strip()), "")
            first = first if len(first) <= 60 else first[:59] + "…"
            raise policy.PolicyError(say("self_check_refused_cell", what=_one_line(what), cell=first), line)
