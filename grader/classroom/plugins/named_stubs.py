"""``NamedStubs``: each ``### BEGIN SOLUTION`` region becomes a stub that names the exercise and the function to write,
so a student who runs an unfinished cell reads ``NotImplementedError: exercise 'square': write Square.backward``.
A region may declare its own stub instead, in ``### STUB`` lines."""

from __future__ import annotations

import re

from nbformat import NotebookNode
from nbgrader.preprocessors import ClearSolutions


_DEF = re.compile(r"^(\s*)(?:async\s+)?def\s+(\w+)")


_CLASS = re.compile(r"^(\s*)class\s+(\w+)")


def enclosing_name(lines: list[str], indent: str) -> str:
    """'Square.backward' for a region inside that method, from the lines above the region."""
    names: list[str] = []
    depth = len(indent)
    for line in reversed(lines):
        match = _DEF.match(line) or _CLASS.match(line)
        if match and len(match.group(1)) < depth:
            names.append(match.group(2))
            depth = len(match.group(1))
    return ".".join(reversed(names))


class NamedStubs(ClearSolutions):
    """ClearSolutions whose Python stub says which exercise and which function to write.

    A solution region may declare the stub students get instead, one line each, in lines
    ``### STUB <code>`` inside the region: released, the region becomes those lines (marker removed,
    indentation kept). For a cell whose stub must run rather than raise, such as a cell where students
    paste their answers from an earlier notebook::

        ### BEGIN SOLUTION
        ### STUB Square = None  # paste your Square here
        class Square(torch.autograd.Function): ...
        ### END SOLUTION
    """

    stub_template = '# YOUR CODE HERE\nraise NotImplementedError("exercise {exercise!r}: write {target}")'
    stub_marker = "### STUB"

    def _replace_solution_region(self, cell: NotebookNode, language: str) -> bool:
        if cell.cell_type != "code" or language != "python":
            return super()._replace_solution_region(cell, language)
        exercise = cell.metadata.get("nbgrader", {}).get("grade_id", "?")
        new_lines: list[str] = []
        declared: list[str] = []  # the region's own stub, from its ### STUB lines
        in_solution = replaced = False
        for line in cell.source.split("\n"):
            if self.begin_solution_delimeter in line:
                if in_solution:
                    raise RuntimeError(f"nested BEGIN SOLUTION in cell {exercise!r}")
                in_solution = replaced = True
                indent = re.match(r"\s*", line).group(0)  # type: ignore[union-attr]
                target = enclosing_name(new_lines, indent) or "this part"
                declared = []
            elif self.end_solution_delimeter in line:
                in_solution = False
                stub = declared or [indent + stub_line for stub_line in
                                    self.stub_template.format(exercise=exercise, target=target).split("\n")]
                new_lines.extend(stub)
            elif in_solution and line.lstrip().startswith(self.stub_marker):
                code = line.lstrip()[len(self.stub_marker):].removeprefix(" ")
                declared.append(line[: len(line) - len(line.lstrip())] + code)
            elif not in_solution:
                new_lines.append(line)
        if in_solution:
            raise RuntimeError(f"no END SOLUTION in cell {exercise!r}")
        cell.source = "\n".join(new_lines)
        return replaced
