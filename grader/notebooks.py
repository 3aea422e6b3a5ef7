"""Keep committed notebooks diff-friendly, and check that student notebooks leak nothing.

    python -m grader.notebooks normalize solutions notebooks   # strip outputs, canonical JSON, in place
    python -m grader.notebooks check                           # report problems; exit 1 if any
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

# Cell metadata that Jupyter rewrites as you work: dropped so that diffs show only real changes.
VOLATILE_CELL_KEYS = ("execution", "collapsed", "scrolled", "jupyter", "ExecuteTime")
LEAK_MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "BEGIN MARK SCHEME")


def canonical(nb: nbformat.NotebookNode) -> str:
    """The notebook without outputs, execution counts, cell ids or volatile metadata, as nbformat writes it."""
    for cell in nb.cells:
        cell.pop("id", None)
        for key in VOLATILE_CELL_KEYS:
            cell.metadata.pop(key, None)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        if not cell.get("attachments"):
            cell.pop("attachments", None)
    nb.nbformat, nb.nbformat_minor = 4, 4
    language = nb.metadata.get("language_info", {}).get("name", "python")
    nb.metadata["language_info"] = {"name": language}
    return nbformat.writes(nb) + "\n"


def notebooks_under(*folders: Path) -> list[Path]:
    return sorted(p for f in folders for p in f.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def normalize(paths: list[Path]) -> list[Path]:
    """Rewrite each notebook in canonical form; return those that changed."""
    changed = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        new = canonical(nbformat.reads(text, as_version=4))
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed


def problems(root: Path) -> list[str]:
    """What is wrong with the committed notebooks, one sentence each."""
    found = []
    for path in notebooks_under(root / "solutions", root / "notebooks"):
        text = path.read_text(encoding="utf-8")
        if canonical(nbformat.reads(text, as_version=4)) != text:
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
