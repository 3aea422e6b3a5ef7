"""Compile time of the course's policy: a graded cell's tree goes through ``CourseTransformer`` (RestrictedPython's
``RestrictingNodeTransformer`` with the course's rules, ``grader.sandboxed.policy_rules``) before it runs: refused
constructs name their line; attribute reads, writes, imports and unsafe builtins become calls of the run time's
guards (``grader.sandboxed.policy.Runtime``). ``check`` lists a cell's refusals; ``transform`` makes its tree safe.
"""

from __future__ import annotations

import ast
import re
from typing import Any, Callable

from RestrictedPython.transformer import INSPECT_ATTRIBUTES, RestrictingNodeTransformer

from grader.sandboxed.policy_rules import (_BUILTIN_NAMES, DUNDER_ATTRIBUTES, GUARDED_BUILTINS, MODULE_ALLOWED_ONLY,
                                           MODULE_REFUSED, MODULES, READABLE_DUNDER_NAMES, REFUSED_CALLS, SAFE_BUILTINS,
                                           SPECIAL_METHODS, PolicyError, _allowed_below, _private)


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
        self.check_name(node, node.id, allow_magic_methods=True)  # (`__radd__ = __add__` in a class body)
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

    # -- match statements: patterns read attributes (dotted value names, a class's fields) where no guard can sit, so
    # every dotted name and class a pattern uses is evaluated before the statement, through the guards, into a
    # holder the patterns read instead; field names are plain names, and a class's fields are checked when it runs
    def visit_Match(self, node: Any) -> Any:
        self.match_count = getattr(self, "match_count", 0) + 1
        holder, hoisted = f"_match_values_{self.match_count}_", []
        node.subject = self.visit(node.subject)
        for case in node.cases:
            case.pattern = self._pattern(case.pattern, holder, hoisted)
            if case.guard is not None:
                case.guard = self.visit(case.guard)
            case.body = [n for stmt in case.body for n in _as_list(self.visit(stmt))]
        if not hoisted:
            return node
        values = ast.Call(func=ast.Name("_match_values_", ast.Load()), args=[],
                          keywords=[ast.keyword(arg=name, value=value) for name, value in hoisted])
        return [ast.copy_location(ast.Assign(targets=[ast.Name(holder, ast.Store())], value=values), node), node]

    def _hoist(self, expr: Any, holder: str, hoisted: list[tuple[str, Any]], kind: str = "value",
               fields: list[str] | None = None) -> Any:
        name = f"v{len(hoisted)}"
        value = self.visit(expr)
        if kind == "class":  # checked when it runs: which fields its positional patterns read (__match_args__)
            value = ast.Call(func=ast.Name("_match_class_", ast.Load()),
                             args=[value, ast.List([ast.Constant(f) for f in fields or []], ast.Load())], keywords=[])
        hoisted.append((name, value))
        return ast.copy_location(ast.Attribute(ast.Name(holder, ast.Load()), name, ast.Load()), expr)

    def _pattern(self, pattern: Any, holder: str, hoisted: list[tuple[str, Any]]) -> Any:
        def sub(p: Any) -> Any:
            return self._pattern(p, holder, hoisted)

        if isinstance(pattern, ast.MatchValue):
            if not isinstance(pattern.value, (ast.Constant, ast.UnaryOp, ast.BinOp)):
                pattern.value = self._hoist(pattern.value, holder, hoisted)
        elif isinstance(pattern, ast.MatchSequence):
            pattern.patterns = [sub(p) for p in pattern.patterns]
        elif isinstance(pattern, ast.MatchMapping):
            pattern.keys = [k if isinstance(k, (ast.Constant, ast.UnaryOp, ast.BinOp)) else self._hoist(k, holder, hoisted)
                            for k in pattern.keys]
            pattern.patterns = [sub(p) for p in pattern.patterns]
            self.check_name(pattern, pattern.rest)
        elif isinstance(pattern, ast.MatchClass):
            for field in pattern.kwd_attrs:
                if field.startswith("_"):
                    self.error(pattern, f'the field "{field}" in a class pattern is not available in graded code '
                                        "(patterns read public fields only)")
            pattern.cls = self._hoist(pattern.cls, holder, hoisted, "class", list(pattern.kwd_attrs))
            pattern.patterns = [sub(p) for p in pattern.patterns]
            pattern.kwd_patterns = [sub(p) for p in pattern.kwd_patterns]
        elif isinstance(pattern, ast.MatchStar):
            self.check_name(pattern, pattern.name)
        elif isinstance(pattern, ast.MatchAs):
            if pattern.pattern is not None:
                pattern.pattern = sub(pattern.pattern)
            self.check_name(pattern, pattern.name)
        elif isinstance(pattern, ast.MatchOr):
            pattern.patterns = [sub(p) for p in pattern.patterns]
        return pattern

    # -- from __future__ import annotations: a directive to the compiler, not a module the cell reaches
    def _future_import(self, node: ast.ImportFrom) -> bool:
        return node.module == "__future__" and not node.level

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
        magic = _magic_call(node)
        if magic is not None:  # %time, %timeit, %matplotlib (IPython wrote get_ipython().run_line_magic(...))
            if magic[1] not in MAGICS:
                self.error(node, f"the %{magic[1]} magic is not available in graded code (%time, %timeit and "
                                 "%matplotlib are)")
                return node
            return ast.copy_location(ast.Call(func=ast.Name("_magic_", ast.Load()),
                                              args=[ast.Constant(v) for v in magic], keywords=[]), node)
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
        if self._future_import(node):
            return node
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


MAGICS = frozenset({"time", "timeit", "matplotlib"})


def _magic_call(node: ast.Call) -> tuple[str, str, str, str] | None:
    """(kind, name, line, cell) of ``get_ipython().run_line_magic(name, line)`` or ``.run_cell_magic(name, line,
    cell)`` with constant arguments (how IPython writes ``%name line`` and ``%%name``); else None."""
    fn = node.func
    if not (isinstance(fn, ast.Attribute) and fn.attr in ("run_line_magic", "run_cell_magic")
            and isinstance(fn.value, ast.Call) and isinstance(fn.value.func, ast.Name)
            and fn.value.func.id == "get_ipython" and not fn.value.args and not node.keywords):
        return None
    values = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if len(values) != len(node.args) or len(values) not in (2, 3):
        return None
    kind = "cell" if fn.attr == "run_cell_magic" else "line"
    return kind, values[0], values[1], values[2] if kind == "cell" else ""


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

