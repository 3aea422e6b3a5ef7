"""Which of the grader's modules the guard of a notebook's process covers (``grader.sandboxed.child.Guard``).

Computed when a Guard is made, after the worker's warm-up: every ``grader.*`` module then loaded is guarded, but
those named in ``UNGUARDED`` with the reason. A module added to the grader is guarded without being named anywhere
(tests/test_shape.py checks this against what the warm-up loads).
"""
from __future__ import annotations

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
