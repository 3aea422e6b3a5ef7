"""The instructor's notebooks, as the gradebook holds them (read once per process)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook


class InstructorNotebook:
    """One notebook of an assignment as the gradebook holds it (its cells, points, kernelspec): read once per
    process, since it does not change while a class is autograded (every plugin used to query the gradebook for it
    again, for every student: a quarter of nbgrader's own time per notebook)."""

    def __init__(self, notebook: Any) -> None:
        import json

        self.points = {g.name: g.max_score for g in notebook.grade_cells}
        self.code_grades = {g.name for g in notebook.grade_cells if g.cell_type == "code"}
        self.solutions = {c.name for c in notebook.solution_cells}
        self.tasks = {t.name: t.max_score for t in notebook.task_cells}
        self.kernelspec = json.loads(notebook.kernelspec) if notebook.kernelspec else None
        # (name, cell type, source, locked, checksum), in the gradebook's order
        self.source_cells = [(c.name, c.cell_type, c.source, bool(c.locked), c.checksum) for c in notebook.source_cells]
        self.cells_by_name = {cell[0]: cell for cell in self.source_cells}
        self._released: dict[str, str] | None = None

    def known(self) -> set[str]:
        return set(self.cells_by_name)

    def released(self) -> dict[str, str]:
        """grade_id -> the source of each code cell as students received it (hidden tests removed)."""
        if self._released is None:
            from nbgrader.preprocessors import ClearHiddenTests

            clear = ClearHiddenTests()
            released = {}
            for name, cell_type, source, *_ in self.source_cells:
                cell = nbformat.v4.new_code_cell(source)
                clear._remove_hidden_test_region(cell)
                released[name] = cell.source
            self._released = released
        return self._released


_INSTRUCTOR: dict[tuple[str, str, str], InstructorNotebook] = {}


def instructor_notebook(db_url: str, assignment: str, notebook_id: str) -> InstructorNotebook:
    """The gradebook's ``notebook_id`` of ``assignment`` (nbgrader's MissingEntry when it has none), read once."""
    key = (str(db_url), assignment, notebook_id)
    found = _INSTRUCTOR.get(key)
    if found is None:
        from nbgrader.api import Gradebook

        with Gradebook(db_url) as gb:
            found = InstructorNotebook(gb.find_notebook(notebook_id, assignment))
        _INSTRUCTOR[key] = found
    return found


_SOURCES: dict[tuple[Path, ...], tuple[tuple[float, ...], frozenset[str]]] = {}


def instructor_sources(paths: tuple[Path, ...]) -> frozenset[str]:
    """``runner.instructor_sources`` of the notebooks in ``paths`` that exist, read again only when one changes."""
    from grader.judge import runner

    stamps = tuple(p.stat().st_mtime if p.exists() else -1.0 for p in paths)
    known = _SOURCES.get(paths)
    if known is not None and known[0] == stamps:
        return known[1]
    sources = runner.instructor_sources(*(nbformat.read(str(p), as_version=4) for p in paths if p.exists()))
    _SOURCES[paths] = (stamps, sources)
    return sources


def placeholder_notebook(db_url: str, assignment: str, notebook_id: str, reason: str) -> Any:
    """Stands for an unreadable submission: the instructor's cells as released (from the gradebook), after a
    notice saying why; nbgrader then puts back and records every test cell, each failed with ``reason``."""
    from grader.spec.messages import message, say

    cells = [new_markdown_cell(say("unreadable_notice", reason=reason) + " " + message("unreadable_notice").hint)]
    notebook = instructor_notebook(db_url, assignment, notebook_id)
    points, tasks = notebook.points, notebook.tasks
    for name, cell_type, source, locked, checksum in notebook.source_cells:
        meta: dict[str, Any] = {"grade_id": name, "grade": name in points, "solution": name in notebook.solutions,
                                "locked": locked, "schema_version": 3}
        if name in points:
            meta["points"] = points[name]
        if name in tasks:
            meta.update(task=True, points=tasks[name])
        if checksum:
            meta["checksum"] = checksum
        make = new_code_cell if cell_type == "code" else new_markdown_cell
        cells.append(make(source, metadata={"nbgrader": meta}))
    nb = new_notebook(cells=cells)
    if notebook.kernelspec:
        nb.metadata["kernelspec"] = notebook.kernelspec
    return nb
