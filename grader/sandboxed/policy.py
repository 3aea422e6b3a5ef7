"""The policy every cell a student wrote or changed is compiled and run under (RestrictedPython, adapted).

Why a policy and not more detection: the observer runs in the student's own process, so whatever it relies on
(its plan, its report path, the audit hook's switches) is an object in that process. Detecting each way of
reaching those objects after the fact failed twice (gc walks, frames, ``f_back`` with no audit event, ``execv``).
Here the student's code cannot *name* them: the grader's machinery is reachable only through frames, code objects,
``gc``, ``sys``, ``os``, ``ctypes``, modules outside the course, underscore attributes and a handful of builtins,
and every one of those roads is closed when the cell is compiled or when an attribute is read.

How (each rule is one line of ``RULES`` below, and a refused construct names its line and the rule):
- **Compile time** (``CourseTransformer``, a subclass of RestrictedPython's ``RestrictingNodeTransformer``,
  maintained by the Zope foundation for two decades): no dunder names or attributes (but ``__init__``,
  ``__name__``, ``__qualname__``, ``__doc__`` and the special methods of ``SPECIAL_METHODS``), no frame, code or
  generator internals (``f_back``, ``gi_frame`` ...), no ``metaclass=``, no ``async``, no ``except*``, no relative
  imports; attribute reads become ``_getattr_(obj, name)``, writes ``_write_(obj).name``, imports ``_import_``, and
  a name that would fall through to a builtin the course does not offer (``eval``, ``open``, ``globals`` ...)
  becomes ``_name_("eval")``. Unlike stock RestrictedPython it keeps honest code as it is: ``_helper`` names,
  ``print``, annotations, ``nonlocal``, ``x.grad += g``.
- **Run time** (``Runtime``): ``_getattr_`` lets code read attributes of the course's kinds of objects only
  (builtins, torch, numpy, matplotlib, the modules of ``MODULES``, and classes the notebook defined); a module is
  reachable only if it is in ``MODULES``; frames, code objects, tracebacks and cells are never handed out; torch's
  and numpy's escape hatches (``torch.library``, ``torch.ops``, ``torch.load``, hooks that outlive a call, numpy's
  ctypes bridges and memory maps ...) are refused by name. ``_write_`` lets code write attributes of objects, never
  of modules or of classes it did not define. ``type`` with three arguments and metaclasses are refused, and the
  classes a cell defines may only define the special methods of ``SPECIAL_METHODS`` (no ``__torch_function__``).

What the instructor wrote (a cell byte-identical to one of the instructor's) runs as it is.
"""

from __future__ import annotations

import ast
import builtins
import copy
import functools
import operator
import re
import string
import sys
import types
import weakref
from typing import Any, Callable

from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence
from RestrictedPython.transformer import INSPECT_ATTRIBUTES, IOPERATOR_TO_STR, RestrictingNodeTransformer

# What a graded cell may import (and so reach as a module through attributes): the course's own needs.
MODULES = frozenset({
    "torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.nn.parameter", "torch.autograd",
    "torch.autograd.function", "torch.autograd.forward_ad", "torch.autograd.functional", "torch.autograd.graph",
    "torch.autograd.gradcheck", "torch.func", "torch.linalg", "torch.fft", "torch.special", "torch.testing",
    "torch.distributions", "torch.optim", "torch.random", "torch.types", "torch.nn.utils",
    "numpy", "numpy.linalg", "numpy.random", "numpy.testing", "numpy.fft", "numpy.polynomial",
    "math", "cmath", "random", "statistics", "fractions", "decimal", "functools", "itertools", "collections",
    "collections.abc", "typing", "contextlib", "warnings", "time", "re", "copy", "weakref", "dataclasses",
    "matplotlib", "matplotlib.pyplot", "matplotlib.ticker", "matplotlib.colors", "matplotlib.cm",
    "matplotlib.patches", "matplotlib.lines", "matplotlib.gridspec", "torchviz", "grader.graphs", "grader.checks",
    "grader.basics",
})
# Names refused on a module of MODULES (escape hatches and what reads or maps arbitrary files or memory).
MODULE_REFUSED: dict[str, frozenset[str]] = {
    "torch": frozenset({"ops", "library", "classes", "hub", "jit", "load", "compile", "export", "fx", "package",
                        "multiprocessing", "distributed", "utils", "overrides", "from_file", "backends", "cuda",
                        "mps", "xpu", "onnx", "profiler", "serialization",
                        "UntypedStorage", "TypedStorage"}),
    "torch.autograd": frozenset({"profiler"}),
    "torch.autograd.graph": frozenset({"register_multi_grad_hook", "allow_mutation_on_saved_tensors",
                                       "disable_saved_tensors_hooks"}),
    "numpy": frozenset({"ctypeslib", "lib", "memmap", "fromfile", "load", "save", "savez", "savez_compressed",
                        "loadtxt", "savetxt", "genfromtxt", "fromregex", "f2py", "distutils", "core",
                        "show_config", "DataSource"}),
    "typing": frozenset({"get_type_hints", "ForwardRef", "get_overloads"}),  # they eval strings
    "functools": frozenset({"singledispatch", "singledispatchmethod"}),  # register() evals string annotations
    "dataclasses": frozenset({"make_dataclass"}),  # its namespace= would define any special method
    "weakref": frozenset({"finalize"}),
    "copy": frozenset({"dispatch_table"}),  # copyreg's: a reducer's state makes copy setattr any name on any object
    "numpy.testing": frozenset({"measure", "runstring", "rundocs", "decorate_methods"}),  # exec strings, setattr
}
# The grader's modules a notebook's cells use (the self-checks students may call again in their own cells, the
# skip of unfinished exercises, the graph drawing): only those names, never the modules' other contents.
MODULE_ALLOWED_ONLY: dict[str, frozenset[str]] = {
    "grader.graphs": frozenset({"draw", "show"}),
    "grader.checks": frozenset({"skip_if_unfinished", "forward", "first_derivatives", "second_derivatives",
                                "structure", "forward_mode", "vmap"}),
    "grader.basics": frozenset({"check_vjp", "check_vjp_keeps_grad", "check_mean_gradient",
                                "check_mean_gradient_stale", "check_mean_gradient_copy", "check_second_derivative",
                                "check_second_derivative_general", "check_hvp", "check_hvp_forward_over_reverse",
                                "check_penalty_value", "check_penalty_gradient"}),
}
# Names refused on any object that is not the notebook's own: hooks that outlive a call, raw memory, pickling.
REFUSED_EVERYWHERE = frozenset({
    "ctypes", "ctypeslib", "tofile", "from_file", "data_ptr", "untyped_storage", "storage", "share_memory_",
    "register_hook", "register_prehook", "register_post_accumulate_grad_hook", "register_forward_hook",
    "register_forward_pre_hook", "register_full_backward_hook", "register_full_backward_pre_hook",
    "register_backward_hook", "register_state_dict_pre_hook", "register_state_dict_post_hook",
    "register_load_state_dict_pre_hook", "register_load_state_dict_post_hook", "register_module",
    "register_step_pre_hook", "register_step_post_hook", "register_buffer_registration_hook",
    "register_vmap", "register_autograd", "register_fake", "register_kernel", "register_torch_dispatch",
    "mro", "f_back", "cell_contents", *INSPECT_ATTRIBUTES,
})
# Dunder names a graded cell may read as attributes, and the special methods its classes may define.
DUNDER_ATTRIBUTES = frozenset({"__init__", "__name__", "__qualname__", "__doc__", "__version__"})
SPECIAL_METHODS = frozenset({
    "__init__", "__repr__", "__str__", "__len__", "__call__", "__iter__", "__next__", "__getitem__", "__contains__",
    "__enter__", "__exit__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__post_init__",
})
CLASS_NAMESPACE_DUNDERS = SPECIAL_METHODS | {"__module__", "__qualname__", "__doc__", "__classcell__",
                                             "__annotations__", "__orig_bases__"}
# Builtins a graded cell uses as they are; every other builtin name goes through _name_ (guarded or refused).
SAFE_BUILTINS = frozenset({
    "abs", "all", "any", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr", "classmethod", "complex",
    "dict", "dir", "divmod", "enumerate", "filter", "float", "format", "frozenset", "hash", "hex", "id", "int",
    "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min", "next", "object", "oct", "ord", "pow",
    "print", "property", "range", "repr", "reversed", "round", "set", "slice", "sorted", "staticmethod", "str",
    "sum", "super", "tuple", "zip", "None", "True", "False", "Ellipsis", "NotImplemented", "display",
    *(name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)),
})
# Calls refused when the cell is compiled (unless the name is the cell's own variable there).
REFUSED_CALLS = frozenset({"globals", "locals", "vars", "open", "compile", "breakpoint", "help", "memoryview",
                           "exit", "quit", "get_ipython", "exec", "eval"})
# What a cell may name though it is not safe as it is: the guarded versions (Runtime.builtins).
GUARDED_BUILTINS = frozenset({"getattr", "setattr", "hasattr", "delattr", "type"})
# IPython's names in a notebook's namespace that no graded cell may reach (removed when the runtime is installed).
IPYTHON_NAMES = ("get_ipython", "exit", "quit")
READABLE_DUNDER_NAMES = frozenset({"__name__"})  # `if __name__ == "__main__":` in a pasted script
HELPERS = ("_getattr_", "_write_", "_getitem_", "_getiter_", "_iter_unpack_sequence_", "_unpack_sequence_",
           "_apply_", "_inplacevar_", "_name_", "_import_", "_import_from_", "__metaclass__")

ALLOWED_TYPE_ROOTS = frozenset({"builtins", "torch", "numpy", "matplotlib", "math", "cmath", "random", "statistics",
                                "fractions", "decimal", "functools", "itertools", "collections", "typing",
                                "contextlib", "warnings", "time", "re", "copy", "weakref", "dataclasses",
                                "torchviz", "graphviz", "PIL", "_collections", "_functools", "_operator",
                                "__main__", "enum", "abc", "types"})
NEVER_HANDED_OUT = (types.FrameType, types.CodeType, types.TracebackType, types.CellType, types.ModuleType,
                    types.MappingProxyType)
WHAT_IS_ALLOWED = ("graded cells may use torch, numpy, math and the modules the course teaches "
                   "(README, 'What graded code may use')")


class PolicyError(Exception):
    """A construct a graded cell may not use: at compile time (with its line) or when it runs."""

    def __init__(self, message: str, lineno: int | None = None) -> None:
        super().__init__(message)
        self.lineno = lineno

    def _render_traceback_(self) -> list[str]:  # IPython shows exactly these lines
        line = self.lineno or _cell_line(self.__traceback__)
        where = f"line {line}: " if line else ""
        return [f"PolicyError: {where}{self}", f"({WHAT_IS_ALLOWED})"]


def _cell_line(tb: Any) -> int | None:
    """The line of the deepest frame that is not the policy's own (the student's line that was refused)."""
    import traceback

    line = None
    for frame, lineno in traceback.walk_tb(tb):
        if frame.f_code.co_filename != __file__:
            line = lineno
    return line


def _refused(what: str) -> PolicyError:
    return PolicyError(f"{what} is not available in graded code")


# ---------------------------------------------------------------------------------------------- compile time

def _private(name: str) -> bool:
    """RestrictedPython's helpers and dunders look like ``_x_``; ``_``, ``_helper`` and ``_x1`` are the student's."""
    return name.startswith("_") and name != "_" and (name.endswith("_") or name.startswith("__"))


class CourseTransformer(RestrictingNodeTransformer):
    """RestrictedPython's transformer with the course's rules (see the module's docstring)."""

    def __init__(self, errors: list[str] | None = None, warnings: list[str] | None = None,
                 used_names: dict[str, Any] | None = None) -> None:
        super().__init__(errors if errors is not None else [], warnings if warnings is not None else [],
                         used_names if used_names is not None else {})
        self.scopes: list[tuple[str, set[str]]] = []  # (kind, names bound there), innermost last

    # -- names
    def check_name(self, node: Any, name: str | None, allow_magic_methods: bool = False) -> None:
        if name is None:
            return
        if allow_magic_methods and name in SPECIAL_METHODS and self.scopes and self.scopes[-1][0] == "class":
            return
        if _private(name):
            self.error(node, f'the name "{name}" is not available in graded code (names like __x__ and _x_ belong '
                             "to Python and the grader; a helper may be called _x)")

    def inject_print_collector(self, node: Any, position: int = 0) -> None:
        return None  # print is Python's own print here

    def _bound_locally(self, name: str) -> bool:
        """Is ``name`` bound in the current function (or an enclosing one, or the class body being run)?"""
        for depth, (kind, names) in enumerate(reversed(self.scopes)):
            if kind == "class" and depth > 0:
                continue  # a class body's names are not visible to its methods
            if kind == "module":
                return False
            if name in names:
                return True
        return False

    def visit_Name(self, node: ast.Name) -> Any:
        if isinstance(node.ctx, ast.Load):
            if node.id in _BUILTIN_NAMES and node.id not in SAFE_BUILTINS and not self._bound_locally(node.id):
                # would fall through to a builtin the course does not offer as it is: the notebook's own variable
                # of that name, the guarded builtin (getattr, type ...), or a refusal, decided when it runs
                new = ast.Call(func=ast.Name("_name_", ast.Load()), args=[ast.Constant(node.id)], keywords=[])
                return ast.copy_location(new, node)
            self.used_names[node.id] = True
            if node.id in READABLE_DUNDER_NAMES:
                return node
        self.check_name(node, node.id)
        return node

    # -- scopes (for the builtin names above)
    def _with_scope(self, kind: str, node: Any, visit: Callable[[], Any]) -> Any:
        self.scopes.append((kind, _bindings(node)))
        try:
            return visit()
        finally:
            self.scopes.pop()

    def visit_Module(self, node: ast.Module) -> Any:
        return self._with_scope("module", node, lambda: self.node_contents_visit(node))

    def visit_Interactive(self, node: Any) -> Any:
        return self._with_scope("module", node, lambda: self.node_contents_visit(node))

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        self.check_name(node, node.name, allow_magic_methods=True)
        self.check_function_argument_names(node)
        for decorator in node.decorator_list:
            self.visit(decorator)
        node.args = self.visit(node.args)
        if node.returns is not None:
            node.returns = self.visit(node.returns)
        decorators, args, returns = node.decorator_list, node.args, node.returns
        node.decorator_list, node.returns = [], None

        def body() -> Any:
            node.body = [n for stmt in node.body for n in _as_list(self.visit(stmt))]
            return node

        result = self._with_scope("function", node, body)
        result.decorator_list, result.args, result.returns = decorators, args, returns
        return result

    def visit_arguments(self, node: ast.arguments) -> Any:
        return self.node_contents_visit(node)

    def visit_Lambda(self, node: ast.Lambda) -> Any:
        self.check_function_argument_names(node)
        node.args = self.visit(node.args)
        return self._with_scope("function", node, lambda: setattr(node, "body", self.visit(node.body)) or node)

    def _comprehension(self, node: Any) -> Any:
        return self._with_scope("function", node, lambda: self.node_contents_visit(node))

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_ClassDef(self, node: ast.ClassDef) -> Any:
        self.check_name(node, node.name)
        if any(keyword.arg == "metaclass" for keyword in node.keywords):
            self.error(node, "metaclass= is not available in graded code")
        node.bases = [self.visit(b) for b in node.bases]
        node.keywords = [self.visit(k) for k in node.keywords]
        node.decorator_list = [self.visit(d) for d in node.decorator_list]

        def body() -> Any:
            node.body = [n for stmt in node.body for n in _as_list(self.visit(stmt))]
            return node

        node = self._with_scope("class", node, body)
        node.keywords.append(ast.keyword(arg="metaclass", value=ast.Name("__metaclass__", ast.Load())))
        return node

    # -- what stock RestrictedPython refuses but honest course code writes
    def visit_AnnAssign(self, node: ast.AnnAssign) -> Any:
        return self.node_contents_visit(node)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> Any:
        for name in node.names:
            self.check_name(node, name)
        return node

    def visit_Global(self, node: ast.Global) -> Any:
        for name in node.names:
            self.check_name(node, name)
        return node

    def visit_NamedExpr(self, node: Any) -> Any:
        return self.node_contents_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> Any:
        if isinstance(node.target, (ast.Attribute, ast.Subscript)):
            # x.grad += g: read and written through the guard of writes (the name itself is checked as a write)
            node = self.node_contents_visit(node)
            return node
        return super().visit_AugAssign(node)

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        name = node.attr
        if name.startswith("__") and not (name in DUNDER_ATTRIBUTES and isinstance(node.ctx, ast.Load)):
            self.error(node, f'".{name}" is not available in graded code (Python\'s internals)')
        elif name in INSPECT_ATTRIBUTES or name == "f_back":
            self.error(node, f'".{name}" is not available in graded code (frames and code objects)')
        elif name.startswith("_") and name.endswith("_") and name != "_" and name not in DUNDER_ATTRIBUTES:
            self.error(node, f'".{name}" is not available in graded code')
        if isinstance(node.ctx, ast.Load):
            node = self.node_contents_visit(node)
            new = ast.Call(func=ast.Name("_getattr_", ast.Load()), args=[node.value, ast.Constant(name)], keywords=[])
            return ast.copy_location(new, node)
        node = self.node_contents_visit(node)
        new_value = ast.Call(func=ast.Name("_write_", ast.Load()), args=[node.value, ast.Constant(name)], keywords=[])
        ast.copy_location(new_value, node.value)
        node.value = new_value
        return node

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        node = self.node_contents_visit(node)
        if isinstance(node.ctx, ast.Load):
            new = ast.Call(func=ast.Name("_getitem_", ast.Load()), args=[node.value, node.slice], keywords=[])
            return ast.copy_location(new, node)
        node.value = ast.copy_location(ast.Call(func=ast.Name("_write_", ast.Load()), args=[node.value],
                                                keywords=[]), node)
        return node

    # -- imports: through the guard, never Python's __import__
    def _check_module(self, node: Any, name: str) -> None:
        parts = name.split(".")
        for k in range(1, len(parts) + 1):
            prefix = ".".join(parts[:k])
            if prefix not in MODULES and not (k < len(parts) and _allowed_below(prefix)):
                self.error(node, f"import {name}: the module {prefix} is not available in graded code")
                return

    def visit_Call(self, node: ast.Call) -> Any:
        fn = node.func
        if isinstance(fn, ast.Name) and fn.id in REFUSED_CALLS and not self._bound_locally(fn.id):
            self.error(node, f"{fn.id}() is not available in graded code")
        if isinstance(fn, ast.Name) and fn.id in GUARDED_BUILTINS - {"type"} and len(node.args) > 1 \
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str) \
                and node.args[1].value.startswith("__") and node.args[1].value not in DUNDER_ATTRIBUTES:
            self.error(node, f'{fn.id}(..., "{node.args[1].value}") is not available in graded code (Python\'s internals)')
        return super().visit_Call(node)

    def visit_keyword(self, node: ast.keyword) -> Any:
        self.check_name(node, node.arg)  # f(__array_interface__=...) names an attribute as surely as x.__y__
        return self.node_contents_visit(node)

    def visit_Import(self, node: ast.Import) -> Any:
        self.check_import_names(node)
        out = []
        for alias in node.names:
            self._check_module(node, alias.name)
            if alias.asname:  # import a.b as c: c is the module a.b
                value = ast.Call(func=ast.Name("_import_", ast.Load()),
                                 args=[ast.Constant(alias.name), ast.Constant(True)], keywords=[])
                target = alias.asname
            else:  # import a.b: binds a
                value = ast.Call(func=ast.Name("_import_", ast.Load()),
                                 args=[ast.Constant(alias.name), ast.Constant(False)], keywords=[])
                target = alias.name.split(".")[0]
            out.append(ast.copy_location(ast.Assign(targets=[ast.Name(target, ast.Store())], value=value), node))
        return out

    def visit_ImportFrom(self, node: ast.ImportFrom) -> Any:
        if node.level:
            self.error(node, "relative imports are not available in graded code")
            return node
        self.check_import_names(node)
        if node.module not in MODULES and not all(f"{node.module}.{a.name}" in MODULES for a in node.names):
            self.error(node, f"from {node.module} import ...: the module {node.module} is not available in graded code")
        for alias in node.names:
            if alias.name in MODULE_REFUSED.get(node.module, ()) or (
                    node.module in MODULE_ALLOWED_ONLY and alias.name not in MODULE_ALLOWED_ONLY[node.module]):
                self.error(node, f"{node.module}.{alias.name} is not available in graded code")
        out = []
        for alias in node.names:
            value = ast.Call(func=ast.Name("_import_from_", ast.Load()),
                             args=[ast.Constant(node.module), ast.Constant(alias.name)], keywords=[])
            out.append(ast.copy_location(
                ast.Assign(targets=[ast.Name(alias.asname or alias.name, ast.Store())], value=value), node))
        return out


_BUILTIN_NAMES = frozenset(vars(builtins)) | {"get_ipython", "display"}


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _bindings(scope: Any) -> set[str]:
    """The names a scope binds (parameters, assignments, imports, defs, loop and with targets ...), not those
    of the scopes nested in it."""
    names: set[str] = set()
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = scope.args
        names |= {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if x is not None}
    if isinstance(scope, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        body = list(scope.generators)
    else:
        body = scope.body if isinstance(scope.body, list) else [scope.body]

    def walk(node: Any) -> None:
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            for d in node.decorator_list:
                walk(d)
            return  # their bodies are their own scopes
        elif isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            if not isinstance(node, ast.Lambda):
                walk(node.generators[0].iter)
            return
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        for child in ast.iter_child_nodes(node):
            walk(child)

    for stmt in body:
        if isinstance(scope, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            walk(stmt.target)
            for cond in stmt.ifs:
                walk(cond)
        else:
            walk(stmt)
    return names


def check(source: str, filename: str = "<cell>") -> list[tuple[int | None, str]]:
    """The policy's objections to a cell, as (line, message); empty when it may run."""
    try:
        tree = ast.parse(source, filename)
    except SyntaxError:
        return []  # Python's own error, reported as usual
    errors: list[str] = []
    CourseTransformer(errors).visit(tree)
    return [_split(e) for e in errors]


_LINE = re.compile(r"^Line (\d+): (.*)$", re.S)


def _split(error: str) -> tuple[int | None, str]:
    match = _LINE.match(error)
    return (int(match.group(1)), match.group(2)) if match else (None, error)


def transform(tree: ast.Module) -> ast.Module:
    """The cell's tree made safe to run, or PolicyError naming the first refused line."""
    errors: list[str] = []
    tree = CourseTransformer(errors).visit(tree)
    if errors:
        line, message = _split(errors[0])
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise PolicyError(message + more, line)
    return ast.fix_missing_locations(tree)


# ---------------------------------------------------------------------------------------------- run time

class Runtime:
    """The guards one notebook's graded cells call (installed in its namespace under the ``HELPERS`` names)."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        self.namespace = namespace
        self.classes: weakref.WeakSet[type] = weakref.WeakSet()  # classes graded cells defined
        self.names: weakref.WeakKeyDictionary[type, frozenset[str]] = weakref.WeakKeyDictionary()  # their bodies' names
        self.type_ok: dict[type, bool] = {}
        # id -> (object, its stand-in or None): what is refused by name is refused as an object wherever a cell
        # finds it (a copied __dict__, a container), and library callables that read or write attributes named by
        # their arguments are handed out guarded (see _special)
        self.special: dict[int, tuple[Any, Any]] = {}
        self.special_for: tuple[str, ...] = ()

    def install(self) -> None:
        ns = self.namespace
        for name in IPYTHON_NAMES:
            ns.pop(name, None)
        ns.update({
            "_getattr_": self.getattr, "_write_": self.write, "_getitem_": self.getitem, "_getiter_": iter,
            "_iter_unpack_sequence_": guarded_iter_unpack_sequence, "_unpack_sequence_": guarded_unpack_sequence,
            "_apply_": _apply, "_inplacevar_": _inplacevar, "_name_": self.name, "_import_": self.import_,
            "_import_from_": self.import_from, "__metaclass__": self.make_class,
        })
        self._refresh_special()

    def _refresh_special(self) -> None:
        """(Re)compute ``special`` for the modules loaded now (called on install and on each import of a cell)."""
        loaded = tuple(m for m in (*MODULE_REFUSED, "matplotlib.ticker") if m in sys.modules)
        if loaded == self.special_for:
            return
        self.special_for = loaded
        special: dict[int, tuple[Any, Any]] = {}
        for module in loaded:
            for name in MODULE_REFUSED.get(module, ()):
                value = vars(sys.modules[module]).get(name)  # (no module __getattr__: nothing imported lazily)
                if value is not None and not isinstance(value, (types.ModuleType, str, int, float, bool)):
                    special[id(value)] = (value, None)
        for original, stand_in in _stand_ins(self).items():
            special[id(original)] = (original, stand_in)
        self.special = special
        if "matplotlib.ticker" in loaded:
            _guard_tick_templates(sys.modules["matplotlib.ticker"])

    # -- what may be read
    def _own(self, obj: Any) -> bool:
        """An object of a class the notebook's graded cells defined, or such a class."""
        classes = self.classes
        if isinstance(obj, type):
            return any(c in classes for c in obj.__mro__)
        return any(c in classes for c in type(obj).__mro__)

    def _own_attribute(self, obj: Any, name: str) -> bool:
        """``_name`` a graded cell gave its own object: in the instance's dict, or defined in the body of one of
        its own classes (never an internal torch or Python put there: ``_backward_cls``, ``__dict__`` ...)."""
        if name.startswith("__") or name.endswith("_") or not self._own(obj):
            return False
        cls = obj if isinstance(obj, type) else type(obj)
        # the class where Python finds the name (a mixin's body naming it does not make torch.Tensor's value ours)
        owner = next((c for c in cls.__mro__ if name in vars(c)), None)
        if not isinstance(obj, type):
            try:
                in_instance = name in object.__getattribute__(obj, "__dict__")
            except AttributeError:
                in_instance = False
            if in_instance and (owner is None or not _data_descriptor(vars(owner)[name])):
                return True
        return owner is not None and owner in self.classes and name in self.names.get(owner, ())

    def _type_allowed(self, t: type) -> bool:
        known = self.type_ok.get(t)
        if known is None:
            module = getattr(t, "__module__", None) or ""
            known = module.split(".")[0] in ALLOWED_TYPE_ROOTS or any(c in self.classes for c in t.__mro__)
            if t in (types.FrameType, types.CodeType, types.TracebackType, types.CellType):
                known = False
            self.type_ok[t] = known
        return known

    def getattr(self, obj: Any, name: str, *default: Any) -> Any:
        if type(name) is not str:
            raise TypeError("attribute name must be a string")
        if name.startswith("_") and name not in DUNDER_ATTRIBUTES and not self._own_attribute(obj, name):
            raise _refused(f'".{name}" (an underscore attribute of {_kind(obj)})')
        if name in REFUSED_EVERYWHERE and not self._own(obj):
            raise _refused(f'".{name}"')
        if type(obj) is types.ModuleType:
            module = obj.__name__
            if module not in MODULES:
                raise _refused(f"the module {module}")
            if name in MODULE_REFUSED.get(module, ()) or (module in MODULE_ALLOWED_ONLY
                                                          and name not in MODULE_ALLOWED_ONLY[module]):
                raise _refused(f"{module}.{name}")
        elif not self._type_allowed(obj if isinstance(obj, type) else type(obj)):  # a class: by itself, not `type`
            raise _refused(f"reading attributes of {_kind(obj)}")
        value = getattr(obj, name, *default)
        return self._hand_out(value, name)

    def _hand_out(self, value: Any, what: str) -> Any:
        special = self.special.get(id(value))
        if special is not None and special[0] is value:
            if special[1] is None:
                raise _refused(f'"{what}" ({getattr(value, "__module__", "?")}.{getattr(value, "__name__", what)})')
            return special[1]
        if type(value) in _METHOD_TYPES:
            owner = getattr(value, "__self__", None)
            if value is str.format or value is str.format_map:  # they read attributes named in the template
                return _safe_format(str, value.__name__, self)
            if isinstance(owner, str) and value.__name__ in ("format", "format_map"):
                return _safe_format(owner, value.__name__, self)
        if isinstance(value, NEVER_HANDED_OUT):
            if type(value) is types.ModuleType and value.__name__ in MODULES:
                return value
            raise _refused(f'"{what}" ({_kind(value)})')
        if isinstance(value, type) and issubclass(value, type) and value not in self.classes:
            raise _refused(f'"{what}" (a metaclass)')
        return value

    def getitem(self, obj: Any, key: Any) -> Any:
        return self._hand_out(obj[key], "an item")

    def name(self, name: str) -> Any:
        """A builtin name that is not safe as it is: the notebook's own variable of that name, or the guarded
        builtin, or a refusal."""
        ns = self.namespace
        if name in ns and name not in IPYTHON_NAMES:
            return ns[name]
        guarded = self.builtins.get(name)
        if guarded is not None:
            return guarded
        raise _refused(f"{name}()" if callable(getattr(builtins, name, None)) else name)

    @functools.cached_property
    def builtins(self) -> dict[str, Any]:
        runtime = self

        def getattr_(obj: Any, name: str, *default: Any) -> Any:
            if default:
                try:
                    return runtime.getattr(obj, name)
                except AttributeError:
                    return default[0]
            return runtime.getattr(obj, name)

        def hasattr_(obj: Any, name: str) -> bool:
            try:
                runtime.getattr(obj, name)
            except AttributeError:
                return False
            return True

        def setattr_(obj: Any, name: str, value: Any) -> None:
            if type(name) is not str or _private(name) or (name.startswith("_") and not runtime._own(obj)):
                raise _refused(f'setting ".{name}"')
            setattr(runtime.write(obj, name), name, value)

        def delattr_(obj: Any, name: str) -> None:
            if type(name) is not str or _private(name) or (name.startswith("_") and not runtime._own(obj)):
                raise _refused(f'deleting ".{name}"')
            delattr(runtime.write(obj, name), name)

        def type_(*args: Any) -> type:
            if len(args) == 3 and type(args[2]) is dict:  # a class made by a call: the same rules as a class statement
                return runtime.make_class(args[0], tuple(args[1]), dict(args[2]))
            if len(args) != 1:
                raise TypeError("type() takes 1 or 3 arguments")
            return runtime._hand_out(type(args[0]), "type()")

        return {"getattr": getattr_, "hasattr": hasattr_, "setattr": setattr_, "delattr": delattr_, "type": type_}

    # -- what may be written
    def write(self, obj: Any, name: str | None = None) -> Any:
        if type(obj) is types.ModuleType:
            raise _refused(f"changing the module {obj.__name__}")
        if isinstance(obj, type) and not self._own(obj):
            raise _refused(f"changing the class {obj.__qualname__}")
        if name is not None and name.startswith("_") and (isinstance(obj, type) or not self._own(obj)):
            raise _refused(f'setting ".{name}" of {_kind(obj)} (underscore attributes are for your own objects)')
        if name in REFUSED_EVERYWHERE and not self._own(obj):
            raise _refused(f'setting ".{name}"')
        if not self._type_allowed(type(obj)):
            raise _refused(f"changing {_kind(obj)}")
        return obj

    # -- imports
    def import_(self, name: str, whole: bool) -> Any:
        parts = name.split(".")
        for k in range(1, len(parts) + 1):
            prefix = ".".join(parts[:k])
            if prefix not in MODULES and not (k < len(parts) and _allowed_below(prefix)):
                raise _refused(f"import {name}")
        module = __import__(name)
        self._refresh_special()
        if whole:
            return sys.modules[name]
        return module if parts[0] in MODULES else _refuse_module(parts[0])

    def import_from(self, module: str, name: str) -> Any:
        if f"{module}.{name}" in MODULES:  # from grader import checks: a module of the list, not its package
            return self.import_(f"{module}.{name}", True)
        if module not in MODULES:
            raise _refused(f"from {module} import ...")
        imported = __import__(module, fromlist=[name])
        self._refresh_special()
        try:
            return self.getattr(imported, name)
        except AttributeError:
            return self.import_(f"{module}.{name}", True)

    # -- classes
    def make_class(self, name: str, bases: tuple[Any, ...], namespace: dict[str, Any], **kwargs: Any) -> type:
        for key in namespace:
            if type(key) is not str or (key.startswith("_") and key.endswith("_") and key not in CLASS_NAMESPACE_DUNDERS):
                raise _refused(f"a class defining {key}")
        if "__annotations__" in namespace:  # the names of fields (dataclasses exec them, set them on instances)
            annotations = namespace["__annotations__"]
            if type(annotations) is not dict:
                raise _refused(f"a class whose __annotations__ is {_kind(annotations)}")
            for key in annotations:
                if type(key) is not str or not key.isidentifier() or _private(key):
                    raise _refused(f"a class annotating {key!r} (annotations name fields: plain names only)")
            namespace["__annotations__"] = dict(annotations)
        for base in bases:
            if not isinstance(base, type):
                raise _refused(f"a class based on {_kind(base)}")
            if issubclass(base, type):
                raise _refused("a metaclass")
            if not self._type_allowed(base):
                raise _refused(f"a class based on {base.__qualname__}")
        meta: type = type
        for base in bases:
            candidate = type(base)
            if issubclass(candidate, meta):
                meta = candidate
        cls = meta(name, bases, namespace, **kwargs)
        self.classes.add(cls)
        self.names[cls] = frozenset(namespace)
        self.type_ok.clear()
        return cls


_METHOD_TYPES = (types.BuiltinMethodType, types.MethodDescriptorType)


def _allowed_below(prefix: str) -> bool:
    return any(m.startswith(prefix + ".") for m in MODULES)


def _refuse_module(name: str) -> Any:
    raise _refused(f"the module {name}")


def _kind(obj: Any) -> str:
    if type(obj) is types.ModuleType:
        return f"the module {obj.__name__}"
    t = type(obj)
    return f"a {getattr(t, '__module__', '?')}.{getattr(t, '__qualname__', t.__name__)} object"


def _apply(fn: Any, *args: Any, **kwargs: Any) -> Any:
    for key in kwargs:  # f(**{"__array_interface__": ...}): the compile-time rule of keyword names, at run time
        if _private(key):
            raise _refused(f'the keyword argument "{key}"')
    return fn(*args, **kwargs)


def _data_descriptor(value: Any) -> bool:
    return hasattr(type(value), "__set__") or hasattr(type(value), "__delete__")


def _stand_ins(runtime: Runtime) -> dict[Any, Any]:
    """Library callables that read or write attributes named by their arguments, and their guarded versions."""
    def update_wrapper(wrapper: Any, wrapped: Any, assigned: Any = functools.WRAPPER_ASSIGNMENTS,
                       updated: Any = functools.WRAPPER_UPDATES) -> Any:
        _check_wrapper_names(assigned, updated)
        if isinstance(wrapped, types.ModuleType) or isinstance(wrapper, types.ModuleType) or not runtime._type_allowed(
                wrapped if isinstance(wrapped, type) else type(wrapped)):
            raise _refused(f"update_wrapper from {_kind(wrapped)} to {_kind(wrapper)}")
        own_function = isinstance(wrapper, types.FunctionType) and wrapper.__globals__ is runtime.namespace
        if not (own_function or runtime._own(wrapper)):
            raise _refused(f"update_wrapper of {_kind(wrapper)} (a function or object of the notebook's own only)")
        for name in assigned:
            try:
                value = getattr(wrapped, name)
            except AttributeError:
                continue
            setattr(wrapper, name, value)
        for name in updated:  # "__dict__": the wrapped object's public attributes only
            source = getattr(wrapped, name, {})
            getattr(wrapper, name).update({k: v for k, v in source.items() if type(k) is str and not k.startswith("_")})
        wrapper.__wrapped__ = wrapped
        return wrapper

    def wraps(wrapped: Any, assigned: Any = functools.WRAPPER_ASSIGNMENTS,
              updated: Any = functools.WRAPPER_UPDATES) -> Any:
        _check_wrapper_names(assigned, updated)
        return functools.partial(update_wrapper, wrapped=wrapped, assigned=assigned, updated=updated)

    functools.update_wrapper(update_wrapper, functools.update_wrapper)
    functools.update_wrapper(wraps, functools.wraps)
    return {functools.update_wrapper: update_wrapper, functools.wraps: wraps, types.SimpleNamespace: _SimpleNamespace}


def _check_wrapper_names(assigned: Any, updated: Any) -> None:
    if not (set(assigned) <= set(functools.WRAPPER_ASSIGNMENTS) and set(updated) <= set(functools.WRAPPER_UPDATES)):
        raise _refused("update_wrapper/wraps with attribute names of its caller's choosing (functools' own only)")


class _SimpleNamespace(types.SimpleNamespace):
    """types.SimpleNamespace for graded cells: its keyword names become attributes, so they follow the rule of
    names (numpy trusts an object's __array_interface__ as a raw address)."""

    def __init__(self, /, **kwargs: Any) -> None:
        for key in kwargs:
            if type(key) is not str or _private(key):
                raise _refused(f'a SimpleNamespace attribute "{key}"')
        super().__init__(**kwargs)


_SimpleNamespace.__module__ = "types"
_SimpleNamespace.__name__ = _SimpleNamespace.__qualname__ = "SimpleNamespace"


def _guard_tick_templates(ticker: Any) -> None:
    """matplotlib formats tick labels with ``template.format(x=x, pos=pos)`` on a template a cell may give
    (``set_major_formatter("{x.__class__}")``) and an ``x`` it may pass: here the fields may format x and pos,
    never walk their attributes or items."""
    cls = ticker.StrMethodFormatter
    if getattr(cls.__call__, "_policy_guarded", False):
        return
    formatter = _PlainFieldFormatter()

    def __call__(self: Any, x: Any, pos: Any = None) -> str:
        return formatter.format(self.fmt, x=x, pos=pos)

    __call__._policy_guarded = True  # type: ignore[attr-defined]
    cls.__call__ = __call__


_IOPERATORS = {text: getattr(operator, "i" + name) for name, text in (
    ("add", "+="), ("sub", "-="), ("mul", "*="), ("truediv", "/="), ("mod", "%="), ("pow", "**="),
    ("lshift", "<<="), ("rshift", ">>="), ("or", "|="), ("xor", "^="), ("and", "&="), ("floordiv", "//="),
    ("matmul", "@="))}
assert set(_IOPERATORS) == set(IOPERATOR_TO_STR.values())


def _inplacevar(op: str, target: Any, value: Any) -> Any:
    return _IOPERATORS[op](target, value)


class _PlainFieldFormatter(string.Formatter):
    def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
        import _string

        first, rest = _string.formatter_field_name_split(field_name)
        if any(True for _ in rest):
            raise _refused(f'the template field "{{{field_name}}}" (attributes and items of a value)')
        return self.get_value(first, args, kwargs), first


class _SafeFormatter(string.Formatter):
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
        import _string  # string.Formatter's own parser of "0.attr[key]"

        first, rest = _string.formatter_field_name_split(field_name)
        obj = self.get_value(first, args, kwargs)
        for is_attr, key in rest:
            obj = self.runtime.getattr(obj, key) if is_attr else self.runtime.getitem(obj, key)
        return obj, first


def _safe_format(obj: Any, name: str, runtime: Runtime) -> Any:
    formatter = _SafeFormatter(runtime)
    if obj is str:
        return (lambda template, *a, **k: formatter.vformat(template, a, k)) if name == "format" else \
            (lambda template, mapping: formatter.vformat(template, (), mapping))
    return (lambda *a, **k: formatter.vformat(obj, a, k)) if name == "format" else \
        (lambda mapping: formatter.vformat(obj, (), mapping))


# ---------------------------------------------------------------------------------------------- self-checks

def _cell_files(obj: Any) -> list[str]:
    """The notebook cells (IPython's file names) that defined ``obj``: a function, a bound method, or a class's
    methods (``Square.apply`` is bound to the class ``Square``)."""
    seen: list[str] = []
    owner = getattr(obj, "__self__", None)
    targets = [obj, owner] if owner is not None else [obj]
    for target in targets:
        functions = []
        if isinstance(target, type):
            for value in vars(target).values():
                value = getattr(value, "__func__", value)
                functions.append(value)
        else:
            functions.append(getattr(target, "__wrapped__", target))
        for fn in functions:
            code = getattr(fn, "__code__", None)
            name = getattr(code, "co_filename", "")
            if isinstance(name, str) and ("ipykernel_" in name or name.startswith("<ipython-input-")) \
                    and name not in seen:
                seen.append(name)
    return seen


def refuse_in_self_check(*objects: Any) -> None:
    """In a notebook the student runs (a self-check), the cells that defined the objects under test are checked
    against the policy autograding will apply, so that a refused construct is reported now, with its line, rather
    than as lost points later. (What is refused only when code runs, a name built at run time, shows in autograding.)
    Raises PolicyError naming the first refused line."""
    import linecache

    for obj in objects:
        for filename in _cell_files(obj):
            source = "".join(linecache.getlines(filename))
            found = check(source)
            if found:
                line, message = found[0]
                name = getattr(obj, "__qualname__", None) or getattr(getattr(obj, "__self__", None), "__qualname__", "it")
                raise PolicyError(f"{message} (in the cell that defines {name}; autograding runs the cells you wrote "
                                  "under the course's policy)", line)


# ---------------------------------------------------------------------------------------------- IPython

class PolicyTransformer(ast.NodeTransformer):
    """Installed in a shell's ``ast_transformers`` while a graded cell compiles: the cell's tree goes through the
    course's policy; a refusal rejects the cell (IPython's ``InputRejected``) with its line.

    It fails closed: IPython unregisters a transformer that raises anything but ``InputRejected`` and then runs the
    cell (and every later one) as it is, so any error here, the policy's own bugs included, rejects the cell."""

    def visit(self, node: Any) -> Any:
        from IPython.core.error import InputRejected

        try:
            return transform(copy.deepcopy(node))  # never a half-transformed tree left behind
        except PolicyError as error:
            raise _rejected(InputRejected, error) from None
        except Exception as error:  # noqa: BLE001 (fail closed, whatever went wrong)
            refusal = PolicyError(f"the grader could not check this cell ({type(error).__name__}: {error}); "
                                  "nothing of it ran")
            raise _rejected(InputRejected, refusal) from None


def _rejected(base: type, error: PolicyError) -> BaseException:
    """An InputRejected that IPython shows as the policy's message, with the refused line."""

    class PolicyRefusal(base):  # type: ignore[misc,valid-type]
        lineno = error.lineno

        def _render_traceback_(self) -> list[str]:
            return error._render_traceback_()

    PolicyRefusal.__name__ = PolicyRefusal.__qualname__ = "PolicyError"
    return PolicyRefusal(str(error))  # the line is the error's lineno (nbgrader's and the grader's messages add it)
