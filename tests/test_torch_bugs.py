"""The known PyTorch bugs the notebooks show (``torch_bug(issue, what, happened)``), read and re-run on the pinned torch.

A notebook never asserts a PyTorch bug (Run All must not stop the day torch fixes it): it tries the behaviour and
calls ``torch_bug`` in both branches, the ``try`` body saying "(fixed in this torch)" and the ``except`` handler what
goes wrong. This test keeps that text honest:

- it finds every ``torch_bug(`` call of the solutions notebooks, with its issue number, what it is about and the
  branch that guards it (the ``try`` body: the behaviour worked; an ``except`` handler: the bug is there);
- it runs the cells that make those calls, with just the cells they need before them (a slice of the notebook, in a
  child process: torch.compile's state stays out of this one), recording which call each branch made;
- it fails if a "fixed" branch ran: the pinned torch no longer has the bug, and the notebook's text must change;
- it fails if a call names no issue where one is filed (``KNOWN``), or a bug without an issue does not say it is not
  filed upstream.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
SOLUTIONS = REPO / "solutions" / "autograd"
HELPER = "torch_bug"

# Bugs filed upstream, by words of what the notebook says they are about: a call about one of them must cite it.
KNOWN = {
    "double backward through a compiled region": 91469,  # torch.compile + aot_autograd: no double backward
    "a Function with a jvp": 118397,  # Dynamo x autograd.Function: a custom jvp is not traced (graph break)
    "torch.func.grad over the operator": 170834,  # custom_op's register_autograd builds a classic-style Function
}
UNFILED = "not filed upstream"  # what torch_bug prints for issue 0


@dataclass(frozen=True)
class BugCall:
    notebook: str
    cell: int  # index among the notebook's cells
    line: int  # in the cell's source
    issue: int | None  # None: not a literal int
    what: str
    branch: str  # "fixed" (a try body: the behaviour worked), "bug" (an except handler), or "" (neither)
    guard: str  # the conditions around it, as written (if ...; try; except ...)

    @property
    def where(self) -> str:
        return f"{self.notebook} cell {self.cell} line {self.line} (pytorch/pytorch#{self.issue}: {self.what!r})"


def code_cells(path: Path) -> list[tuple[int, str]]:
    nb = nbformat.read(str(path), as_version=4)
    return [(i, c.source) for i, c in enumerate(nb.cells) if c.cell_type == "code"]


def bug_calls(notebook: str, cells: list[tuple[int, str]]) -> list[BugCall]:
    """Every ``torch_bug(...)`` call of the cells, with the branch and conditions it sits in."""
    found: list[BugCall] = []

    def visit(node: ast.AST, branch: str, guard: tuple[str, ...], cell: int) -> None:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == HELPER:
            issue = node.args[0] if node.args else None
            what = node.args[1] if len(node.args) > 1 else None
            found.append(BugCall(
                notebook, cell, node.lineno,
                issue.value if isinstance(issue, ast.Constant) and isinstance(issue.value, int) else None,
                what.value if isinstance(what, ast.Constant) and isinstance(what.value, str) else ast.unparse(what)
                if what else "", branch, "; ".join(guard)))
        if isinstance(node, ast.Try):
            for child in node.body:
                visit(child, "fixed", (*guard, "try"), cell)
            for handler in node.handlers:
                caught = ast.unparse(handler.type) if handler.type else ""
                for child in handler.body:
                    visit(child, "bug", (*guard, f"except {caught}".strip()), cell)
            for child in [*node.orelse, *node.finalbody]:
                visit(child, branch, guard, cell)
            return
        if isinstance(node, ast.If):
            visit(node.test, branch, guard, cell)
            for child in node.body:
                visit(child, branch, (*guard, f"if {ast.unparse(node.test)}"), cell)
            for child in node.orelse:
                visit(child, branch, (*guard, f"if not {ast.unparse(node.test)}"), cell)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, branch, guard, cell)

    for index, source in cells:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        visit(tree, "", (), index)
    return found


def bound_names(tree: ast.AST, top_level: bool = False) -> set[str]:
    """The names a cell binds: everywhere (parameters and function locals too), or only at its top level (what later
    cells can use: assignments, imports, defs and classes, not what their bodies bind)."""
    names: set[str] = set()
    nodes = list(ast.iter_child_nodes(tree))
    while nodes:
        node = nodes.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        if not (top_level and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
                                                ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))):
            nodes.extend(ast.iter_child_nodes(node))
    return names


def free_names(tree: ast.AST) -> set[str]:
    """The names a cell reads that it does not bind itself: what it needs from the cells before it."""
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    return used - bound_names(tree)


def slice_for(cells: list[tuple[int, str]], targets: set[int]) -> list[tuple[int, str]]:
    """The target cells and, walking back, every earlier cell that binds at its top level a name a kept cell after
    it reads without binding it."""
    trees = {i: ast.parse(s) for i, s in cells}
    kept, needed = [], set()
    for index, source in reversed(cells):
        tree = trees[index]
        if index in targets or (index < max(targets) and bound_names(tree, top_level=True) & needed):
            kept.append((index, source))
            needed = (needed - bound_names(tree, top_level=True)) | free_names(tree)
    return kept[::-1]


RUNNER = textwrap.dedent('''
    import ast as _tb_ast, json as _tb_json, sys as _tb_sys
    _tb_calls = []

    def __record__(original):
        def torch_bug(issue, what, happened):
            frame = _tb_sys._getframe(1)
            original(issue, what, happened)
            _tb_calls.append({"cell": int(frame.f_code.co_filename.split(":")[1]), "line": frame.f_lineno,
                              "issue": issue, "what": what, "happened": str(happened)})
        return torch_bug

    # the cells run in __main__ itself, as in a kernel (Dynamo's guards look their globals up in that module)
    for _tb_index, _tb_source in _tb_json.loads(_tb_sys.argv[1]):
        _tb_tree = _tb_ast.parse(_tb_source)
        _tb_body = []
        for _tb_node in _tb_tree.body:  # the notebook's own torch_bug (it still prints), wrapped to record each call
            _tb_body.append(_tb_node)
            if isinstance(_tb_node, _tb_ast.FunctionDef) and _tb_node.name == "torch_bug":
                _tb_body += _tb_ast.parse("torch_bug = __record__(torch_bug)").body
        _tb_tree.body = _tb_body
        _tb_ast.fix_missing_locations(_tb_tree)
        exec(compile(_tb_tree, f"cell:{_tb_index}", "exec"), globals())
    with open(_tb_sys.argv[2], "w") as _tb_file:
        _tb_json.dump(_tb_calls, _tb_file)
''')


def run_slice(cells: list[tuple[int, str]], tmp_path: Path, timeout: float = 120) -> tuple[list[dict], str]:
    """Run ``cells`` in order in one fresh process (in ``tmp_path``, as the student's kernel would run them there):
    (the torch_bug calls made, what was printed)."""
    out = tmp_path / "calls.json"
    done = subprocess.run([sys.executable, "-c", RUNNER, json.dumps(cells), str(out)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=timeout,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO),
                               "MPLBACKEND": "Agg"})
    assert done.returncode == 0, f"the notebook's cells failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return json.loads(out.read_text()), done.stdout


def problems_of(calls: list[BugCall], made: list[dict], printed: str) -> list[str]:
    """What is wrong with the notebooks' bug reports, given the calls the run made and its output."""
    problems = []
    by_site = {(c.cell, c.line): c for c in calls}
    for call in calls:
        if call.issue is None:
            problems.append(f"{call.where}: the issue is not a literal number (0 when it is not filed)")
        known = next((n for words, n in KNOWN.items() if words in call.what), None)
        if known and call.issue != known:
            problems.append(f"{call.where}: this bug is filed as pytorch/pytorch#{known}: cite it")
        if call.branch == "":
            problems.append(f"{call.where}: not guarded by try/except ({call.guard or 'no condition'}): a bug must be "
                            f"shown, never let stop the run")
    pairs = {(c.notebook, c.what, c.issue) for c in calls}
    for notebook, what, issue in pairs:
        branches = {c.branch for c in calls if (c.notebook, c.what, c.issue) == (notebook, what, issue)}
        if branches != {"fixed", "bug"}:
            problems.append(f"{notebook}: torch_bug({issue}, {what!r}) has branches {sorted(branches)}: the try body "
                            f"says it is fixed, the except handler what goes wrong")
    for record in made:
        call = by_site.get((record["cell"], record["line"]))
        if call is None:
            continue
        said = f"{record['what']}: {record['happened']}"
        if call.branch == "fixed":
            problems.append(f"{call.where} reported \"{said}\" on this torch: the bug is fixed (or changed): update "
                            f"the notebook's text around it ({call.guard})")
        if said not in printed:
            problems.append(f"{call.where}: printed nothing like {said!r}")
        elif record["issue"]:
            if f"pytorch/pytorch#{record['issue']}" not in printed:
                problems.append(f"{call.where}: the printed line does not link pytorch/pytorch#{record['issue']}")
        elif UNFILED not in printed:
            problems.append(f"{call.where}: issue 0 must print that the bug is {UNFILED!r}")
    ran = {(r["cell"], r["line"]) for r in made}
    for notebook, what, issue in pairs:
        sites = {(c.cell, c.line) for c in calls if (c.notebook, c.what, c.issue) == (notebook, what, issue)}
        if not sites & ran:
            problems.append(f"{notebook}: torch_bug({issue}, {what!r}) did not run at all (a guard skipped it?)")
    return problems


# --- the course's notebooks -------------------------------------------------------------------------------------------

def notebooks_with_bugs() -> list[Path]:
    return [p for p in sorted(SOLUTIONS.glob("*.ipynb")) if f"{HELPER}(" in p.read_text(encoding="utf-8")]


def test_the_notebooks_show_known_bugs():
    calls = [c for p in notebooks_with_bugs() for c in bug_calls(p.name, code_cells(p))]
    assert len(calls) >= 6, f"the torch_bug calls were not found: {calls}"


@pytest.mark.parametrize("path", notebooks_with_bugs(), ids=lambda p: p.name)
def test_every_guarded_bug_is_still_there_on_the_pinned_torch_and_cites_its_issue(path, tmp_path):
    cells = code_cells(path)
    calls = bug_calls(path.name, cells)
    targets = {c.cell for c in calls}
    made, printed = run_slice(slice_for(cells, targets), tmp_path)
    if "torch.compile does not run here" in printed:
        pytest.skip("torch.compile cannot run in this environment: the notebook skips its demos")
    problems = problems_of(calls, made, printed)
    assert not problems, "\n".join(problems) + f"\n\nprinted:\n{printed[-3000:]}"


# --- the checker fails when it should ---------------------------------------------------------------------------------

FAKE_SETUP = '''
import math


def torch_bug(issue, what, happened):
    where = f"pytorch/pytorch#{issue}" if issue else "not filed upstream"
    print(f"{what}: {happened}  [{where}]")
'''
FAKE_BUG = '''
try:
    math.sqrt({value})
    torch_bug({issue}, "sqrt of {value}", "worked (fixed in this torch)")
except ValueError as err:
    torch_bug({issue}, "sqrt of {value}", err)
'''


def fake(tmp_path: Path, value: str, issue: int, setup: str = FAKE_SETUP) -> list[str]:
    cells = [(0, "unused = 1"), (1, setup), (2, FAKE_BUG.format(value=value, issue=issue))]
    calls = bug_calls("fake.ipynb", cells)
    assert [(c.branch, c.issue) for c in calls] == [("fixed", issue), ("bug", issue)]
    sliced = slice_for(cells, {c.cell for c in calls})
    assert [i for i, _ in sliced] == [1, 2]
    made, printed = run_slice(sliced, tmp_path, timeout=30)
    return problems_of(calls, made, printed)


def test_a_bug_still_there_passes(tmp_path):
    assert fake(tmp_path, "-1", 12345) == []
    assert fake(tmp_path, "-1", 0) == []  # not filed, and says so


def test_a_bug_fixed_in_this_torch_fails_saying_so(tmp_path):
    [problem] = fake(tmp_path, "4", 12345)
    assert "reported \"sqrt of 4: worked (fixed in this torch)\"" in problem and "update the notebook" in problem


def test_an_unfiled_bug_must_say_it_is_unfiled(tmp_path):
    silent = FAKE_SETUP.replace('"not filed upstream"', '""')
    [problem] = fake(tmp_path, "-1", 0, setup=silent)
    assert UNFILED in problem


def test_a_known_bug_without_its_issue_fails(tmp_path, monkeypatch):
    monkeypatch.setitem(KNOWN, "sqrt of", 777)
    problems = fake(tmp_path, "-1", 0)
    assert len(problems) == 2 and all("this bug is filed as pytorch/pytorch#777" in p for p in problems), problems
