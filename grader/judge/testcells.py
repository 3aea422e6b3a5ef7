"""Read the instructor's test cells as data: which checks, on which student function, with which probes.

The trusted grader never runs test cells next to student code. It parses them (they are the
instructor's, restored from the solutions), sends the *observation* requests to the sandbox, and
judges the answers itself. A test cell may hold only imports of the grader and calls such as::

    checks.first_derivatives("square", Square.apply, shapes=[(3, 3)], seed=11)
    basics.check_vjp(vector_jacobian_product, sizes=(5, 7), seed=3)
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from grader.spec import registry


def exercise_of(grade_id: str) -> str:
    """'sinh-double-backward' -> 'sinh' (the exercise contract: test ids start with '<exercise>-')."""
    return grade_id.split("-", 1)[0]

CHECK_FUNCTIONS = registry.CHECK_FUNCTIONS  # facade -> public name -> check: the registry's (grader.spec.registry)


class UnsupportedTestCell(ValueError):
    """An instructor's test cell the trusted grader cannot interpret (a course-authoring error)."""


@dataclass(frozen=True)
class CheckCall:
    module: str  # the facade: "checks" or "basics" (grader.spec.registry.FACADES)
    check: str  # "first derivatives", "check_vjp", ...
    entry: str  # the expression naming the student's function, e.g. "Square.apply"
    kwargs: dict[str, Any] = field(default_factory=dict)  # literal arguments: exercise, shapes, seed, sizes, ...
    hidden: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"module": self.module, "check": self.check, "entry": self.entry, "kwargs": self.kwargs}


def _entry(node: ast.expr, where: str) -> str:
    probe = node
    while isinstance(probe, ast.Attribute):
        probe = probe.value
    if not isinstance(probe, ast.Name):
        raise UnsupportedTestCell(f"{where}: the function under test must be a name like `Square.apply`")
    return ast.unparse(node)


def parse(source: str, grade_id: str = "") -> list[CheckCall]:
    """The check calls of one test cell, in order; raises UnsupportedTestCell for anything else."""
    lines = source.split("\n")
    hidden_lines: set[int] = set()
    inside = False
    for number, line in enumerate(lines, start=1):
        if "BEGIN HIDDEN TESTS" in line:
            inside = True
        elif "END HIDDEN TESTS" in line:
            inside = False
        elif inside:
            hidden_lines.add(number)
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise UnsupportedTestCell(f"test cell {grade_id!r} is not valid Python: {exc}") from None
    calls = []
    for stmt in tree.body:
        where = f"test cell {grade_id!r}, line {stmt.lineno}"
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) and all(
                a.name.split(".")[0] in ("grader", *CHECK_FUNCTIONS) for a in stmt.names) and (
                not isinstance(stmt, ast.ImportFrom) or (stmt.module or "").startswith("grader")):
            continue
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and isinstance(call.func.value, ast.Name) and call.func.value.id in CHECK_FUNCTIONS
                and call.func.attr in CHECK_FUNCTIONS[call.func.value.id]):
            raise UnsupportedTestCell(f"{where}: only grader imports and `checks.<check>(...)` / "
                                      f"`basics.check_<name>(...)` calls can be graded in the sandbox")
        module, name = call.func.value.id, call.func.attr
        if any(kw.arg is None for kw in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
            raise UnsupportedTestCell(f"{where}: write every argument out (no * or ** unpacking)")
        try:
            kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords if kw.arg}
            if registry.takes_exercise(module):
                exercise, fn = call.args
                kwargs["exercise"] = ast.literal_eval(exercise)
            else:
                (fn,) = call.args
        except (ValueError, TypeError):
            raise UnsupportedTestCell(f"{where}: arguments must be the function under test and literals") from None
        calls.append(CheckCall(module, CHECK_FUNCTIONS[module][name], _entry(fn, where), kwargs,
                               hidden=stmt.lineno in hidden_lines))
    if not calls:
        raise UnsupportedTestCell(f"test cell {grade_id!r} calls no check")
    return calls
