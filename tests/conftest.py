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
ENTRY_NAME = {"square": "Square.apply", "exp": "Exp.apply", "sinh": "sinh", "cube": "Cube.apply",
              "linear": "LinearFunction.apply", "softplus": "Softplus.apply", "sortvalues": "SortValues.apply"}


def _resolve(name: str, ns: dict):
    head, *attributes = name.split(".")
    value = ns[head]
    for attribute in attributes:
        value = getattr(value, attribute)
    return value


ENTRY = {exercise: (lambda ns, name=name: _resolve(name, ns)) for exercise, name in ENTRY_NAME.items()}


@dataclass(frozen=True)
class Cell:
    """One graded test cell of an exercise: which check it calls, on which of the answer's functions."""

    module: str  # "checks" (custom Functions, grader.checks) or "basics" (functions, grader.basics)
    check: str  # the public check's name in that module, e.g. "first_derivatives", "check_hvp"
    entry: str = ""  # for basics: the answer's function the test cell passes, e.g. "hvp_forward"


_FUNCTION_CELLS = {"forward": Cell("checks", "forward"), "first-order": Cell("checks", "first_derivatives"),
                   "second-order": Cell("checks", "second_derivatives"), "structure": Cell("checks", "structure")}

# exercise -> cell suffix ("first-order": test cell `<exercise>-first-order`) -> the check that cell runs
CELLS: dict[str, dict[str, Cell]] = {
    **{exercise: dict(_FUNCTION_CELLS) for exercise in ("square", "exp", "sinh", "cube", "linear")},
    "softplus": {**_FUNCTION_CELLS, "forward-mode": Cell("checks", "forward_mode"), "vmap": Cell("checks", "vmap")},
    "sortvalues": {suffix: _FUNCTION_CELLS[suffix] for suffix in ("forward", "first-order", "structure")},
    "hvp": {"double-backward": Cell("basics", "check_hvp", "hvp"),
            "forward-over-reverse": Cell("basics", "check_hvp_forward_over_reverse", "hvp_forward")},
    "penalty": {"value": Cell("basics", "check_penalty_value", "gradient_penalty"),
                "gradient": Cell("basics", "check_penalty_gradient", "gradient_penalty")},
}
# The old name: the four checks of a notebook-2/3 custom-Function exercise.
CHECK_OF_CELL = {suffix: cell.check for suffix, cell in _FUNCTION_CELLS.items()}

# The arguments of notebook 4's test calls as its contract states them, used only while its test cells are not in
# solutions/ yet: shapes (one call, seed 0) for grader.checks, each call's keyword arguments for grader.basics.
PENDING_CALLS: dict[str, list[dict]] = {
    "softplus": [{"shapes": [(3, 3), (), (5,), (2, 3, 2)]}],
    "sortvalues": [{"shapes": [(2, 5), (6,), (3, 2, 4)]}],
    "hvp": [{"sizes": (4,), "seed": 0}, {"sizes": (2, 7), "seed": 5}],
    "penalty": [{"sizes": (5, 3), "seed": 0}, {"sizes": (8, 4), "seed": 3}],
}


def cell_calls(exercise: str, suffix: str) -> list[dict]:
    """The keyword arguments of each check call of the test cell `<exercise>-<suffix>` in the solutions notebooks,
    visible call first then hidden ones (as nbgrader runs them): an expectation must hold on all of them."""
    from grader import testcells

    grade_id = f"{exercise}-{suffix}"
    cells = solution_cells()
    if grade_id not in cells and exercise in PENDING_CALLS:
        return [dict(kwargs) for kwargs in PENDING_CALLS[exercise]]
    calls = testcells.parse(cells[grade_id].source, grade_id)
    return [{k: v for k, v in call.kwargs.items() if k != "exercise"} for call in calls]


def nbgrader_meta(cell) -> dict:
    return dict(cell.get("metadata", {}).get("nbgrader", {}))


def cells_by_id(path: Path) -> dict[str, nbformat.NotebookNode]:
    return {nbgrader_meta(c)["grade_id"]: c for c in nbformat.read(str(path), as_version=4).cells
            if nbgrader_meta(c).get("grade_id")}


def solution_cells() -> dict[str, nbformat.NotebookNode]:
    cells = {}
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        cells.update(cells_by_id(path))
    for grade_id, source in PENDING_SOLUTIONS.items():  # until notebook 4 is in solutions/
        cells.setdefault(grade_id, nbformat.v4.new_code_cell(source))
    return cells


# Notebook 4's answers as its contract (briefs/nb4-contract.md) states them, used only while
# solutions/autograd/04_modern_functions.ipynb does not exist yet: the notebook's cells take precedence.
PENDING_SOLUTIONS = {
    "softplus": """
class Softplus(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return grad_output * torch.sigmoid(x)

    @staticmethod
    def jvp(ctx, x_t):
        x, = ctx.saved_tensors
        return x_t * torch.sigmoid(x)
""",
    "sortvalues": """
class SortValues(torch.autograd.Function):
    @staticmethod
    def forward(x):
        values, indices = torch.sort(x, dim=-1)
        return values, indices.to(x.dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        values, indices = output
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices.long())

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        indices, = ctx.saved_tensors
        return torch.zeros_like(grad_values).scatter(-1, indices, grad_values)
""",
    "hvp": """
def hvp(f, x, v):
    x = x.detach().requires_grad_()
    g, = torch.autograd.grad(f(x), x, create_graph=True)
    return torch.autograd.grad(g, x, v)[0]


def hvp_forward(f, x, v):
    return torch.func.jvp(torch.func.grad(f), (x,), (v,))[1]
""",
    "penalty": """
def gradient_penalty(f, w, x):
    x = x.detach().requires_grad_()
    g, = torch.autograd.grad(f(w, x).sum(), x, create_graph=True)
    return ((g.flatten(1).norm(dim=1) - 1) ** 2).mean()
""",
}


def namespace_for(exercise: str) -> dict:
    """What an answer cell of ``exercise`` sees: torch, numpy, for cube the locked NumPy helpers, and for notebook 4's
    functions (hvp, penalty) the notebook's Functions their probes are built from: Softplus, and the Square, Exp,
    Sinh and Cube carried over from notebook 3 (the instructor's, as in solutions/)."""
    ns: dict = {"torch": torch, "np": np, "numpy": np}
    cells = solution_cells()
    if exercise == "cube":
        exec(cells["cube-helpers"].source, ns)
    if exercise in ("hvp", "penalty"):
        if "own-functions" in cells:
            exec(cells["own-functions"].source, ns)
        else:  # notebook 3's answers, as the own-functions cell of notebook 4 holds them
            for grade_id in ("square", "exp", "sinh", "cube-helpers", "cube"):
                exec(cells[grade_id].source, ns)
        exec(cells["softplus"].source, ns)
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
    cells = CELLS[exercise.group(1)]
    pairs = dict(kv.split("=", 1) for kv in expect.group(1).split()) if expect else {k: "pass" for k in cells}
    caught = re.search(r"^# caught-by: (\S+)", text, re.M)
    return CatalogueEntry(path, exercise.group(1), described.group(1), pairs, caught.group(1) if caught else "")


MISTAKES = [read_entry(p) for p in sorted((EXAMPLES / "mistakes").glob("*.py"))]
ALTERNATIVES = [read_entry(p) for p in sorted((EXAMPLES / "alternatives").glob("*.py"))]


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO
