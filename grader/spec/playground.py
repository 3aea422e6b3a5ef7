"""Which of a notebook's cells its score depends on; the cells a student added or changed that it does not depend on
are *playground*: never scored and never refused (issue 29, item 5). One definition, used by grading
(``grader.judge.runner.cells_to_run``: a playground cell is not run in the scoring run, its saved outputs are kept,
marked) and by the student's own kernel (``grader.sandboxed.kernel_rule``: the self-checks refuse what autograding
would refuse in every cell the answer depends on, and say nothing of the others).

A cell's *binds* are every name it may change at the notebook's top level: assignments (a tuple's, a star's, an
annotated one's, ``for`` and ``with ... as`` targets), augmented assignments, ``def``, ``class``, ``import``, ``del``,
``global`` declarations in its functions, walrus targets, the root name of an attribute or item it writes
(``Square.apply = ...``, ``d["k"] = v``) and of a method it calls in a statement of its own (``torch.manual_seed(0)``
changes ``torch``, ``w.grad.zero_()`` changes ``w``). Its *reads* are every name it loads anywhere (in its functions
too). IPython's magics count with the code they run (``%time y = f(x)``).

The score depends on its *roots* (answer cells, test cells, the instructor's cells) and on every cell that binds a
name a cell it depends on reads, transitively. A student's cell outside that closure is playground. When unsure (a
cell that does not parse, ``from x import *``) a cell binds everything: it is scored, never playground.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

EVERYTHING = "*"  # a cell that may bind any name (``from m import *``, unparseable code)


@dataclass(frozen=True)
class Names:
    binds: frozenset[str]
    reads: frozenset[str]
    deferred: frozenset[str] = frozenset()  # of ``reads``: those only its functions read (when they are called)


@functools.lru_cache(maxsize=4096)
def names(source: str) -> Names:
    """What ``source`` (a code cell, IPython syntax allowed) binds at the top level and reads as a global anywhere
    (a function's own locals and parameters are not reads)."""
    binds: set[str] = set()
    reads: set[str] = set()
    deferred: set[str] = set()
    try:
        readable = _collect(source, binds, reads, deferred)
    except Exception:  # noqa: BLE001 (code nested too deep for the parser, ...: when unsure, a cell is scored)
        readable = False
    if not readable:
        return Names(frozenset({EVERYTHING}), frozenset())
    return Names(frozenset(binds), frozenset(reads | deferred), frozenset(deferred - reads))


def _python(source: str) -> str | None:
    """``source`` as Python (IPython's magics, shell escapes and help as IPython runs them), or None."""
    try:
        ast.parse(source)
        return source
    except Exception:  # noqa: BLE001 (SyntaxError, ValueError, RecursionError ...)
        pass
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        text = TransformerManager().transform_cell(source)
        ast.parse(text)
        return text
    except Exception:  # noqa: BLE001
        return None


_MAGIC_CALLS = {"run_line_magic", "run_cell_magic"}
# Methods whose call in a statement of its own changes nothing the notebook names (every other one may change the
# object it is called on: torch.manual_seed(0), w.grad.zero_(), lst.append(x))
_READ_ONLY_CALLS = _MAGIC_CALLS | {"apply", "show", "plot", "scatter", "imshow", "hist", "title", "xlabel", "ylabel",
                                   "legend", "grid", "figure", "subplots", "tight_layout", "savefig", "display"}
# Magics that run the Python they are given (anything else IPython would run is not the cell's Python: e.g. a shell
# command); an unknown one's is read as code too, when it parses.
_CODE_MAGICS = {"time", "timeit", "prun"}  # they run the Python they are given (and %%capture its cell's)
# Magics that bind no name of the notebook's and run none of its Python (any other one: it may bind anything)
_INERT_MAGICS = {"matplotlib", "who", "whos", "pwd", "ls", "env", "pip", "conda", "html", "HTML", "markdown", "latex",
                 "javascript", "js", "svg", "bash", "sh", "script", "writefile", "config", "precision", "pprint",
                 "xmode", "page", "pinfo", "pinfo2", "psearch", "pdoc", "pdef", "psource", "pfile", "history",
                 "lsmagic", "magic", "quickref"}
_MAGIC_OPTIONS = re.compile(r"^(?:\s*-[A-Za-z]+(?:\s*\d+)?(?=\s))*")  # %timeit -n 10 -r 3 ...


def _collect(source: str, binds: set[str], reads: set[str], deferred: set[str] | None = None) -> bool:
    """Add what ``source`` binds and reads; False when it cannot be read (it may then bind anything)."""
    import symtable

    text = _python(source)
    if text is None:
        return False
    try:
        tree = ast.parse(text)
        top = symtable.symtable(text, "<cell>", "exec")
    except (SyntaxError, ValueError):
        return False
    deferred = reads if deferred is None else deferred
    tables = [(top, False)]
    while tables:
        table, later = tables.pop()
        inner = later or table.get_type() == "function"  # (a class body runs where it stands; a function later)
        tables.extend((child, inner) for child in table.get_children())
        for symbol in table.get_symbols():
            if table is top:
                if symbol.is_referenced():
                    reads.add(symbol.get_name())
                if symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace():
                    binds.add(symbol.get_name())
            elif symbol.is_referenced() and symbol.is_global():
                (deferred if inner else reads).add(symbol.get_name())
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            binds.update(node.names)
        elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            binds.add(node.target.id)  # (it may leak out of a comprehension at the top level: counted, to be safe)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MAGIC_CALLS:
            magic = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else None
            args = [a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else None for a in node.args[1:]]
            if magic in _INERT_MAGICS:  # %matplotlib inline, %%html ...
                continue
            if magic == "capture" and len(args) == 2 and args[0] is not None:  # %%capture [options] [name]
                binds.update(w for w in args[0].split() if w.isidentifier())
                args = args[1:]
            elif magic not in _CODE_MAGICS or None in args:
                binds.add(EVERYTHING)
                continue
            for k, code in enumerate(args):  # %time y = f(x), %timeit -n 10 f(x): the code the magic runs
                code = _MAGIC_OPTIONS.sub("", code or "") if k == 0 else (code or "")
                if code.strip() and not _collect(code, binds, reads, deferred):
                    binds.add(EVERYTHING)
    for node in _top_level(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(alias.name == "*" for alias in node.names):
                binds.add(EVERYTHING)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete, ast.For, ast.AsyncFor)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                binds.update(_roots(target))
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    binds.update(_roots(item.optional_vars))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
                and isinstance(node.value.func, ast.Attribute) and node.value.func.attr not in _READ_ONLY_CALLS:
            binds.update(_roots(node.value.func.value))  # torch.manual_seed(0), w.grad.zero_(), lst.append(x)
    binds.discard("get_ipython")  # IPython's own (a shell escape calls a method of it)
    return True


def _roots(target: ast.AST) -> set[str]:
    """The names a write to ``target`` changes: ``a``, ``(a, b)``, ``*a``, ``a.b.c``, ``a[k]``, ``f(x).y`` (f's)."""
    found: set[str] = set()
    stack = [target]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, (ast.Tuple, ast.List)):
            stack.extend(node.elts)
        elif isinstance(node, ast.Starred):
            stack.append(node.value)
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            stack.append(node.value)
        elif isinstance(node, ast.Call):
            stack.append(node.func)
    return found


def _top_level(tree: ast.AST) -> Iterable[ast.AST]:
    """The statements that run in the module's scope: its body and the bodies of its if/for/while/try/with/match."""
    stack = list(getattr(tree, "body", []))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            stack.extend(getattr(node, field, []) or [])


def scored(sources: Sequence[str], roots: Iterable[int], extra_reads: Iterable[str] = (),
           extra_at: int | None = None) -> set[int]:
    """The indices of ``sources`` (a notebook's code cells, in order) the score depends on: ``roots`` and,
    transitively, every cell before a dependent cell's *horizon* that binds a name the dependent cell reads. A root's
    horizon is itself; a cell reached from it inherits it (a function defined in cell 3 and called in cell 9 reads
    the globals cells 4-8 bound too). ``extra_reads``: names the grader itself reads from the notebook, at cell
    ``extra_at`` (the last test cell; default: the end). Every cell that may bind anything (``EVERYTHING``) is in."""
    table = [names(s) for s in sources]
    end = len(sources)
    binders: dict[str, list[int]] = {}
    for k, n in enumerate(table):
        for name in n.binds:
            binders.setdefault(name, []).append(k)
    horizon: dict[int, int] = {}  # cell -> the latest point it is needed at
    pending = [(k, k) for k in roots if 0 <= k < end]
    pending += [(k, end) for k, n in enumerate(table) if EVERYTHING in n.binds]
    at = end if extra_at is None else extra_at
    pending += [(k, at) for name in extra_reads for k in binders.get(name, ()) if k < at]
    while pending:
        k, h = pending.pop()
        if horizon.get(k, -1) >= h:
            continue
        horizon[k] = h
        for name in table[k].reads:
            pending.extend((j, h) for j in binders.get(name, ()) if j < h and horizon.get(j, -1) < h)
    return set(horizon)


def grader_reads() -> frozenset[str]:
    """Names the checks look up in the notebook's namespace themselves (notebook 4's probes go through the student's
    own Functions by name): read by every test cell."""
    try:
        from grader.spec.function_probes import OWN_FUNCTIONS

        return frozenset(OWN_FUNCTIONS)
    except Exception:  # noqa: BLE001 (a registry that cannot load: every Function of the course, to be safe)
        return frozenset({"Softplus", "Square", "Exp", "Cube", "Sinh"})


def playground(sources: Sequence[str], student: Sequence[bool], roots: Iterable[int],
               checks_at: int | None = None) -> set[int]:
    """The indices of the student's cells (``student[k]``: added or changed by the student, not an answer or test
    cell) the score does not depend on. ``checks_at``: the last test cell's index (the checks read the names of
    ``grader_reads`` there; default: the end)."""
    keep = scored(sources, roots, grader_reads(), checks_at)
    return {k for k in range(len(sources)) if student[k] and k not in keep}
