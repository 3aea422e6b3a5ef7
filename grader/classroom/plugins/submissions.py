"""Submissions nbgrader cannot read: read defensively, or said why not (``UnreadableSubmission``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat


MAX_NOTEBOOK_BYTES = 100 * 2**20  # a submission larger than this is not read


class UnreadableSubmission(Exception):
    """The file is not a notebook nbgrader can read; str() says why, in a few words."""


def read_submission(path: str | Path) -> Any:
    """The notebook in ``path`` (nbformat 4), or UnreadableSubmission saying why it is not one."""
    import json
    import warnings

    try:
        with open(path, "rb") as f:
            data = f.read(MAX_NOTEBOOK_BYTES + 1)
    except OSError as exc:
        raise UnreadableSubmission(f"it cannot be opened ({exc.strerror or exc})") from None
    if not data.strip():
        raise UnreadableSubmission("the file is empty")
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise UnreadableSubmission(f"it is larger than {MAX_NOTEBOOK_BYTES // 2**20} MB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UnreadableSubmission("it is binary data, not text") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        cut = exc.pos >= len(text.rstrip()) - 1
        raise UnreadableSubmission(f"it is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}"
                                   + (": the file ends too early, truncated?)" if cut else ")")) from None
    except RecursionError:
        raise UnreadableSubmission("it is not valid JSON (nested too deeply)") from None
    if not isinstance(raw, dict):
        raise UnreadableSubmission(f"it holds a JSON {_json_type(raw)}, not a notebook")
    version = raw.get("nbformat")
    if not isinstance(version, int) or isinstance(version, bool):
        raise UnreadableSubmission("it has no notebook format version ('nbformat'): not a notebook")
    if version not in (3, 4):
        raise UnreadableSubmission(f"its notebook format version is {version}; only 3 and 4 can be read")
    if version == 3:  # an old notebook: its cells are in worksheets
        worksheets = raw.get("worksheets")
        if not isinstance(worksheets, list) or not all(isinstance(w, dict) for w in worksheets):
            raise UnreadableSubmission("its 'worksheets' (notebook format 3) is "
                                       + ("missing" if worksheets is None else "a JSON " + _json_type(worksheets))
                                       + ", not a list of worksheets")
        cells = [cell for w in worksheets for cell in (w.get("cells") if isinstance(w.get("cells"), list) else [None])]
        kinds: tuple[str, ...] = ("code", "markdown", "raw", "heading")
    else:
        cells = raw.get("cells")
        if not isinstance(cells, list):
            raise UnreadableSubmission(f"its 'cells' is {'missing' if cells is None else 'a JSON ' + _json_type(cells)}, "
                                       "not a list of cells")
        kinds = ("code", "markdown", "raw")
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") not in kinds:
            raise UnreadableSubmission(f"its cell {number} is not a notebook cell")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # missing or duplicate cell ids: repaired, as Jupyter would
            notebook = with_cell_ids(nbformat.convert(_to_notebook(raw, version), 4))
            nbformat.validate(notebook)
    except Exception as exc:  # ValidationError, NBFormatError, or nbformat tripping over garbage
        detail = " ".join(str(getattr(exc, "message", "") or exc).split())
        where = "/".join(str(p) for p in getattr(exc, "absolute_path", []) or [])
        raise UnreadableSubmission("it is not a valid notebook (" + (f"at {where}: " if where else "")
                                   + (detail[:150] + "..." if len(detail) > 150 else detail) + ")") from None
    return notebook


def with_cell_ids(notebook: Any) -> Any:
    """A notebook of format 4.0-4.4 (Colab's downloads, Jupyter before 2021, this course's release before 26 Nov)
    as format 4.5: every cell gets an id (``cell-<n>``, its place; unique), as Jupyter does when it opens one.
    Grading then writes and reads one format: nbgrader's copy in autograded/ held the ids of the instructor's cells
    it put back under format 4.4, which forbids them, and the right answers in it scored 0 ("'id' was unexpected")."""
    if notebook.get("nbformat") != 4 or notebook.get("nbformat_minor", 0) >= 5:
        return notebook
    taken = {c.get("id") for c in notebook.cells if isinstance(c.get("id"), str)}
    for number, cell in enumerate(notebook.cells, 1):
        if not isinstance(cell.get("id"), str):
            name = f"cell-{number}"
            while name in taken:
                name += "-x"
            cell["id"] = name
            taken.add(name)
    notebook["nbformat_minor"] = 5
    return notebook


def _to_notebook(raw: dict[str, Any], version: int) -> Any:
    """nbformat.reader.reads on JSON already parsed (the file is parsed once, not twice)."""
    from nbformat import ValidationError, versions

    try:
        return versions[version].to_notebook_json(raw, minor=raw.get("nbformat_minor", 0))
    except AttributeError as e:  # (nbformat's own words)
        raise ValidationError(f"The notebook is invalid and is missing an expected key: {e}") from None


def _json_type(value: Any) -> str:
    names = {list: "list", str: "string", bool: "boolean", int: "number", float: "number", dict: "object"}
    return names.get(type(value), "null")
