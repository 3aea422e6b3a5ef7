"""Keep committed notebooks diff-friendly, and check that student notebooks leak nothing.

    python -m grader.classroom.notebooks normalize solutions notebooks   # strip outputs, canonical JSON, in place
    python -m grader.classroom.notebooks check                           # report problems; exit 1 if any

Committed notebooks are nbformat 4.5: every cell carries a stable id (its nbgrader grade_id when it has one, else
the id it already has, else one derived from its source). JupyterLab gives a 4.4 notebook's cells random ids when
it opens one, so it showed as modified at once, and each save wrote new ids; with ids present it changes nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import warnings
from pathlib import Path

import nbformat

# Cell metadata that Jupyter rewrites as you work: dropped so that diffs show only real changes.
VOLATILE_CELL_KEYS = ("execution", "collapsed", "scrolled", "jupyter", "ExecuteTime")
LEAK_MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "BEGIN MARK SCHEME")


# nbformat 4.5's rule for a cell id.
CELL_ID = re.compile(r"^[a-zA-Z0-9-_]{1,64}$")


def _id_from(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9-_]", "-", text)[:64] or "cell"


def expected_id(cell: nbformat.NotebookNode) -> str | None:
    """The id a cell with an nbgrader grade_id must carry (its grade_id, made a valid id); None for other cells."""
    grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
    return _id_from(str(grade_id)) if grade_id else None


def assign_ids(nb: nbformat.NotebookNode) -> None:
    """Give every cell a stable, unique id: the grade_id for nbgrader's cells; else the id it has (when valid and
    not taken); else ``<type>-<hash of its source>``. The same notebook always gets the same ids."""
    taken: set[str] = set()

    def unique(base: str) -> str:
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            suffix = f"-{n}"
            candidate = base[:64 - len(suffix)] + suffix
        taken.add(candidate)
        return candidate

    graded = [c for c in nb.cells if expected_id(c)]
    for cell in graded:  # first: nbgrader's ids are unique in a notebook, and others must not take them
        cell["id"] = unique(expected_id(cell))
    for cell in nb.cells:
        if expected_id(cell):
            continue
        current = cell.get("id")
        if isinstance(current, str) and CELL_ID.match(current) and current not in taken:
            taken.add(current)
            continue
        digest = hashlib.sha256(cell.get("source", "").encode("utf-8")).hexdigest()[:8]
        cell["id"] = unique(f"{cell.cell_type}-{digest}")


def canonical(nb: nbformat.NotebookNode) -> str:
    """The notebook without outputs, execution counts or volatile metadata, with stable cell ids (nbformat 4.5),
    as nbformat writes it."""
    for cell in nb.cells:
        for key in VOLATILE_CELL_KEYS:
            cell.metadata.pop(key, None)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        if not cell.get("attachments"):
            cell.pop("attachments", None)
    nb.nbformat, nb.nbformat_minor = 4, 5
    assign_ids(nb)
    language = nb.metadata.get("language_info", {}).get("name", "python")
    nb.metadata["language_info"] = {"name": language}
    return nbformat.writes(nb) + "\n"


def read(text: str) -> nbformat.NotebookNode:
    """A notebook with the cell ids as written: nbformat invents random ids for a 4.5 notebook's cells that have
    none, or repeat another's; the written ones are put back, so that the ids given (assign_ids) and the problems
    found depend on the file alone."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbformat's warnings about those ids: id_problems() says what is wrong
        nb = nbformat.reads(text, as_version=4)
    raw = json.loads(text).get("cells", [])
    if len(raw) == len(nb.cells):
        for cell, written in zip(nb.cells, raw):
            if isinstance(written, dict) and "id" in written:
                cell["id"] = written["id"]
            else:
                cell.pop("id", None)
    return nb


def notebooks_under(*folders: Path) -> list[Path]:
    return sorted(p for f in folders for p in f.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def normalize(paths: list[Path]) -> list[Path]:
    """Rewrite each notebook in canonical form; return those that changed."""
    changed = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        new = canonical(read(text))
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed


def id_problems(nb: nbformat.NotebookNode) -> list[str]:
    """What is wrong with a notebook's cell ids (nbformat 4.5), one sentence each."""
    if (nb.nbformat, nb.nbformat_minor) < (4, 5):
        return [f"is nbformat {nb.nbformat}.{nb.nbformat_minor}, without cell ids: JupyterLab adds random ones when it "
                "opens it (run `make release`)"]
    found, seen = [], set()
    for index, cell in enumerate(nb.cells):
        cell_id = cell.get("id")
        if not isinstance(cell_id, str) or not CELL_ID.match(cell_id):
            found.append(f"cell {index} has no valid id ({cell_id!r}) (run `make release`)")
        elif cell_id in seen:
            found.append(f"cell {index} repeats the id {cell_id!r} (run `make release`)")
        elif expected_id(cell) and cell_id != expected_id(cell):
            found.append(f"cell {index} has the id {cell_id!r}, not its grade_id {expected_id(cell)!r} "
                         "(run `make release`)")
        seen.add(cell_id)
    return found


def problems(root: Path) -> list[str]:
    """What is wrong with the committed notebooks, one sentence each."""
    found = []
    for path in notebooks_under(root / "solutions", root / "notebooks"):
        text = path.read_text(encoding="utf-8")
        nb = read(text)
        found += [f"{path.relative_to(root)}: {p}" for p in id_problems(nb)]
        if canonical(nb) != text:
            found.append(f"{path.relative_to(root)}: has outputs or non-canonical formatting (run `make release`)")
        if path.relative_to(root).parts[0] == "notebooks":
            for marker in LEAK_MARKERS:
                if marker in text:
                    found.append(f"{path.relative_to(root)}: contains '{marker}': instructor text leaks to students")
    return found


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["normalize"]:
        paths = notebooks_under(*(Path(a) for a in args[1:] or ["solutions", "notebooks"]))
        for path in normalize(paths):
            print(f"normalized {path}")
        return 0
    if args[:1] == ["check"]:
        found = problems(Path.cwd())
        print("\n".join(found) or "notebooks are clean")
        return 1 if found else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
