"""Shared helpers: the repository's notebooks and the catalogue of buggy and alternative answers."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions" / "autograd"
RELEASE = REPO / "notebooks" / "autograd"
EXAMPLES = REPO / "examples"

# exercise -> how a test cell gets the function under test from the answer cell's namespace
ENTRY = {
    "square": lambda ns: ns["Square"].apply,
    "exp": lambda ns: ns["Exp"].apply,
    "sinh": lambda ns: ns["sinh"],
    "cube": lambda ns: ns["Cube"].apply,
    "linear": lambda ns: ns["LinearFunction"].apply,
}
CHECK_OF_CELL = {"forward": "forward", "first-order": "first_derivatives", "second-order": "second_derivatives",
                 "structure": "structure"}


def nbgrader_meta(cell) -> dict:
    return dict(cell.get("metadata", {}).get("nbgrader", {}))


def cells_by_id(path: Path) -> dict[str, nbformat.NotebookNode]:
    return {nbgrader_meta(c)["grade_id"]: c for c in nbformat.read(str(path), as_version=4).cells
            if nbgrader_meta(c).get("grade_id")}


def solution_cells() -> dict[str, nbformat.NotebookNode]:
    cells = {}
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        cells.update(cells_by_id(path))
    return cells


def namespace_for(exercise: str) -> dict:
    """What an answer cell of ``exercise`` sees: torch, numpy, and for cube the locked NumPy helpers."""
    ns: dict = {"torch": torch, "np": np, "numpy": np}
    if exercise == "cube":
        exec(solution_cells()["cube-helpers"].source, ns)
    return ns


@dataclass(frozen=True)
class CatalogueEntry:
    path: Path
    exercise: str
    description: str
    expect: dict[str, str]  # cell suffix ("first-order") -> "pass" or the mistake id it must produce
    caught_by: str = ""  # which of PyTorch's own checks notice it: gradcheck, gradgradcheck (only) or neither

    @property
    def id(self) -> str:
        return self.path.stem

    def source(self) -> str:
        return self.path.read_text(encoding="utf-8")

    def load(self) -> dict:
        ns = namespace_for(self.exercise)
        exec(compile(self.source(), str(self.path), "exec"), ns)
        return ns


def read_entry(path: Path) -> CatalogueEntry:
    text = path.read_text(encoding="utf-8")
    exercise = re.search(r"^# exercise: (\S+)", text, re.M)
    expect = re.search(r"^# expect: (.*)$", text, re.M)
    described = re.search(r"^# (?:mistake|style): (.*)$", text, re.M)
    assert exercise and described, f"{path}: needs '# exercise:' and '# mistake:' (or '# style:') header lines"
    pairs = dict(kv.split("=", 1) for kv in expect.group(1).split()) if expect else {k: "pass" for k in CHECK_OF_CELL}
    caught = re.search(r"^# caught-by: (\S+)", text, re.M)
    return CatalogueEntry(path, exercise.group(1), described.group(1), pairs, caught.group(1) if caught else "")


MISTAKES = [read_entry(p) for p in sorted((EXAMPLES / "mistakes").glob("*.py"))]
ALTERNATIVES = [read_entry(p) for p in sorted((EXAMPLES / "alternatives").glob("*.py"))]


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO
