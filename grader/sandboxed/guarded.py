"""Which of the grader's modules the guard of a notebook's process covers (``grader.sandboxed.child.Guard``).

Computed when a Guard is made, after the worker's warm-up: every ``grader.*`` module then loaded is guarded, but
those named in ``UNGUARDED`` with the reason. A module added to the grader is guarded without being named anywhere
(tests/test_shape.py checks this against what the warm-up loads). ``reached`` adds what those modules reach through
their tables and closures (functions, nested tables) and the libraries they call into.
"""
from __future__ import annotations

import os
import sys
import types
from typing import Any

# The grader's modules in a notebook's process that the guard leaves alone, and why. Every other grader module loaded
# when a Guard is made (after the worker's warm-up) is guarded: its dict (additions removed), its functions, its
# classes, its tables; a module added to the grader is guarded without being named here (tests/test_shape.py).
UNGUARDED = {
    "grader": "a package: its dict holds its subpackages; the grader never reaches a module through it",
    **{f"grader.{layer}": "a layer's package: its dict holds its modules; the grader never reaches one through it"
       for layer in ("spec", "boundary", "sandboxed", "isolation", "judge", "classroom")},
    "grader.boundary.channel": "the worker's side: the parent reads the child's reports through it, the child never",
    "grader.boundary.fingerprint": "read by the worker when it starts (its answer to the pool), never after a cell",
    "grader.checks": "the notebook's own self-checks (from grader import checks): nothing graded runs through it",
    "grader.graphs": "drawing in the notebook (from grader.graphs import draw): nothing graded runs through it",
    "grader.sandboxed.policy": "compiles each cell before it runs: reached only through a hole in itself, and what "
                               "it protects is guarded here",
    "grader.sandboxed.worker": "the parent: it forks this child per notebook and never runs again in it",
    "grader.spec.messages": "sentences only: a verdict's text is written on the trusted side",
}
# Guarded modules whose dicts and lists are not put back by content: their own state changes while they run.
TABLES_UNGUARDED = {"grader.sandboxed.child": "the child's own state; the audit hook reads its table into a closure"}


def grader_modules(child_is_main: bool = False) -> list[Any]:
    """The grader's modules loaded now that the guard covers: every ``grader.*`` module but ``UNGUARDED``'s (a
    module known under two names, a kept one and its real one, once), and the child's own module (``__main__``
    when it runs as ``python -m grader.sandboxed.child``)."""
    found: list[Any] = []
    for name, module in sorted(sys.modules.items()):
        if (name == "grader" or name.startswith("grader.")) and module.__name__ not in UNGUARDED \
                and isinstance(module, types.ModuleType) and not any(m is module for m in found):
            found.append(module)
    here = sys.modules["__main__" if child_is_main else "grader.sandboxed.child"]
    return found if any(m is here for m in found) else [*found, here]


# Modules the grader's modules hold that the guard leaves alone, and why (every other one is guarded like torch's
# packages: its names put back, additions kept).
LIBRARIES_UNGUARDED = {
    "sys": "the child rebinds sys.stdout/stderr around each cell; what a notebook could do with sys is flagged",
    "__main__": "the notebook's own namespace when the child runs as a program",
}
# Names a library rebinds itself while the observer runs (warnings.catch_warnings swaps the filter list in and out).
LIBRARY_REBINDS = {"warnings": ("filters", "showwarning", "_showwarnmsg_impl")}
_MAX_REACHED = 20_000  # objects visited at most (the grader's tables hold a few thousand)


def reached(modules: list[Any], tables_skipped: Any = ()) -> tuple[list[Any], list[Any], list[Any]]:
    """What the grader's modules reach beyond their own names: (functions, tables, libraries).

    Walks their namespaces through tables (dict, list, tuple, set), frozen dataclasses' fields, the grader's classes,
    and functions' closures and defaults: every Python function defined in the grader's files found on the way (a
    probe's lambda in a tuple, a setup closure in a registry entry: the observer calls them, a notebook could change
    their code or closure cells), every dict and list below a module's top level (a dataclass's fields, a nested
    table), and every module a grader module holds (functools, traceback, inspect ...: the observer calls into them
    while it runs). Tensors, modules and classes other than the grader's are not walked into."""
    import dataclasses

    grader_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    functions: list[Any] = []
    tables: list[Any] = []
    libraries: list[Any] = []
    seen: set[int] = set()
    stack: list[tuple[Any, int]] = []
    for module in modules:
        seen.add(id(vars(module)))
        values = vars(module).values()  # a module whose own state changes: only the libraries it holds
        stack += [(value, 0) for value in values if module.__name__ not in tables_skipped or type(value) is types.ModuleType]
    while stack and len(seen) < _MAX_REACHED:
        value, depth = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        kind = type(value)
        if kind is types.ModuleType:
            name = value.__name__
            if not (name == "grader" or name.startswith("grader.")) and name not in LIBRARIES_UNGUARDED:
                libraries.append(value)
        elif kind is types.FunctionType:
            if value.__code__.co_filename.startswith(grader_dir):
                functions.append(value)
                stack += [(cell.cell_contents, depth + 1) for cell in value.__closure__ or () if _filled(cell)]
                stack += [(v, depth + 1) for v in (value.__defaults__ or ())]
                stack += [(v, depth + 1) for v in (value.__kwdefaults__ or {}).values()]
        elif kind is dict and _module_of(value) is not None:  # a module's namespace (vars(forward_ad)): the module
            stack.append((_module_of(value), depth + 1))
        elif kind is dict or kind is list:
            if depth > 0:
                tables.append(value)
            stack += [(v, depth + 1) for v in (value.values() if kind is dict else value)]
        elif kind in (tuple, set, frozenset):
            stack += [(v, depth + 1) for v in value]
        elif kind in (staticmethod, classmethod):
            stack.append((value.__func__, depth + 1))
        elif kind is property:
            stack += [(f, depth + 1) for f in (value.fget, value.fset, value.fdel) if f is not None]
        elif isinstance(value, type):
            if value.__module__.startswith("grader."):
                stack += [(v, depth + 1) for v in vars(value).values()]
        elif dataclasses.is_dataclass(value) and type(value).__module__.startswith("grader."):
            fields = vars(value)
            if id(fields) not in seen:
                seen.add(id(fields))
                tables.append(fields)
                stack += [(v, depth + 1) for v in fields.values()]
    return functions, tables, libraries


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _module_of(namespace: dict[str, Any]) -> Any:
    """The module whose namespace this dict is, if it is one (its own state is put back as a namespace, with the
    names torch rebinds left alone, never as a table)."""
    module = sys.modules.get(namespace.get("__name__")) if type(namespace.get("__name__")) is str else None
    return module if module is not None and getattr(module, "__dict__", None) is namespace else None
