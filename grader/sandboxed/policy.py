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
import functools
import re
import sys
import types
import weakref
from typing import Any

from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence

# The rules (the tables, PolicyError) and the compile time are modules of their own (policy_rules, policy_compile);
# this module is the run time, the self-checks and IPython's hook, and the name the rest of the grader uses.
from grader.sandboxed import graph_nodes  # noqa: E402
from grader.sandboxed.graph_nodes import NodeView as _NODE_VIEW  # noqa: E402
from grader.sandboxed.policy_stand_ins import (STAND_IN_MODULES, _guard_tick_templates, _inplacevar,  # noqa: E402
                                               _safe_format, _stand_ins)
from grader.sandboxed.policy_compile import CourseTransformer, check, transform  # noqa: E402,F401
from grader.sandboxed.policy_rules import (ALLOWED_TYPE_ROOTS, CLASS_NAMESPACE_DUNDERS, DUNDER_ATTRIBUTES,  # noqa: E402
                                           IPYTHON_NAMES, MODULE_ALLOWED_ONLY, MODULE_REFUSED, MODULES,
                                           TYPE_ALLOWED_ONLY, TYPE_ALLOWED_ONLY_ROOTS, TYPE_ALLOWED_ONLY_STRICT_ROOTS,
                                           TENSOR_ALLOWED, TYPE_NOT_WRITTEN, TYPE_REFUSED, TYPE_REFUSED_NAMES,
                                           NEVER_HANDED_OUT, REFUSED_EVERYWHERE, PolicyError, _allowed_below,
                                           _kind, _private, _refused, _refused_instead)


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
        self.progress_bars: dict[type, type] = {}  # tqdm's classes, as graded cells get them (_progress_bar)
        self.node_types: dict[type, bool] = {}  # whether a type is an autograd graph node (graph_nodes.is_node)
        self.allow_lists: dict[type, frozenset[str] | None] = {}  # _type_allow_list, per type (attribute reads are hot)
        self.modules_seen = 0  # len(sys.modules) when special was last brought up to date
        self.stand_in_classes: dict[type, type] = {}  # numpy.ndarray's stand-in, one per notebook (type(a) is np.ndarray)

    def install(self) -> None:
        from grader.sandboxed import autograd_env  # noqa: F401  (the engine watch in place before any graded cell)

        ns = self.namespace
        for name in IPYTHON_NAMES:
            ns.pop(name, None)
        ns.update({
            "_getattr_": self.getattr, "_write_": self.write, "_getitem_": self.getitem, "_getiter_": iter,
            "_iter_unpack_sequence_": guarded_iter_unpack_sequence, "_unpack_sequence_": guarded_unpack_sequence,
            "_apply_": _apply, "_inplacevar_": _inplacevar, "_name_": self.name, "_import_": self.import_,
            "_import_from_": self.import_from, "__metaclass__": self.make_class,
            "_match_values_": _MatchValues, "_match_class_": self.match_class, "_magic_": self.magic,
        })
        self._refresh_special()

    def _refresh_special(self) -> None:
        """(Re)compute ``special`` for the modules loaded now (called on install and on each import of a cell)."""
        loaded = tuple(m for m in (*MODULE_REFUSED, *STAND_IN_MODULES) if m in sys.modules)
        if loaded == self.special_for:
            return
        self.special_for = loaded
        special: dict[int, tuple[Any, Any]] = {}
        for module in loaded:
            for name in MODULE_REFUSED.get(module, ()):
                value = vars(sys.modules[module]).get(name)  # (no module __getattr__: nothing imported lazily)
                if value is not None and not isinstance(value, (types.ModuleType, str, int, float, bool)):
                    special[id(value)] = (value, None)
        for original, stand_in in _stand_ins(self):
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
        its own classes (never an internal torch or Python put there: ``_backward_cls``, ``__dict__`` ...); or one it
        gave a Function's ``ctx`` (``ctx._has_bias``: see ``_ctx_attribute``)."""
        if name.startswith("__") or name.endswith("_"):
            return False
        if _ctx_attribute(obj, name):
            try:
                return name in object.__getattribute__(obj, "__dict__")
            except AttributeError:
                return False
        if not self._own(obj):
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
        if type(obj) is _NODE_VIEW:  # a graph node's view reads the node's attributes, by the same rules
            obj = graph_nodes.unwrap(obj)
        if name == "register_hook" and _tensor(obj):
            return _tensor_hook(obj)
        if name.startswith("_") and name not in DUNDER_ATTRIBUTES and not self._own_attribute(obj, name) \
                and not _saved_on_node(obj, name):
            raise _refused(f'".{name}" (an underscore attribute of {_kind(obj)})')
        if name in REFUSED_EVERYWHERE and not self._own(obj):
            raise _refused(f'".{name}"')
        if type(obj) is types.ModuleType:
            if len(sys.modules) != self.modules_seen:  # a module an instructor's cell imported: its stand-ins too
                self.modules_seen = len(sys.modules)
                self._refresh_special()
            module = obj.__name__
            if module not in MODULES:
                raise _refused(f"the module {module}")
            if name in MODULE_REFUSED.get(module, ()) or (module in MODULE_ALLOWED_ONLY
                                                          and name not in MODULE_ALLOWED_ONLY[module]):
                raise _refused(f"{module}.{name}")
        else:
            cls = obj if isinstance(obj, type) else type(obj)  # a class: by itself, not `type`
            if cls in _FUNCTION_TYPES and name not in DUNDER_ATTRIBUTES and _graders_function(obj):
                raise _refused(f'".{name}" of the grader\'s function {getattr(obj, "__name__", "")}')
            if not self._type_allowed(cls):
                raise _refused(f"reading attributes of {_kind(obj)}")
            allowed = self.allow_lists.get(cls, MISSING_LIST)
            if allowed is MISSING_LIST:
                allowed = self.allow_lists[cls] = TENSOR_ALLOWED if _tensor_type(cls) else _type_allow_list(obj)
            if allowed is TENSOR_ALLOWED:  # a tensor's public names (underscore names: the rules above)
                if name not in allowed and not name.startswith("_") and not _instance_attribute(obj, name):
                    if not hasattr(cls, name):
                        raise AttributeError(f"'{cls.__name__}' object has no attribute '{name}'")
                    raise _refused(f'".{name}" of {_kind(obj)}')
            elif allowed is not None and name not in allowed:
                raise _refused(f'".{name}" of {_kind(obj)} (its allowed names: {", ".join(sorted(allowed))})')
            if name in TYPE_REFUSED_NAMES and name in _type_names(cls, TYPE_REFUSED):
                raise _refused_instead(f'".{name}" of {_kind(obj)} (the raw memory of an array)',
                                       "use the array itself, or .tobytes() for its bytes")
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
        kind = type(value)
        node = self.node_types.get(kind)  # (attribute reads are hot: per type, in the runtime, not a grader table)
        if node is None:
            node = self.node_types[kind] = graph_nodes.is_node(value)
        if node or (kind is tuple and what == "next_functions"):
            return graph_nodes.hand_out(value, what)
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

        def vars_(*args: Any) -> dict[str, Any]:
            """``vars(obj)`` of the notebook's own object or class, or of a Function's ctx: a copy of what it keeps
            under plain names (never an object's namespace itself, never Python's or torch's internals)."""
            if len(args) != 1:
                raise _refused("vars() without an argument")
            obj = args[0]
            if not (runtime._own(obj) or _is_ctx(obj)):
                raise _refused(f"vars() of {_kind(obj)} (your own objects and ctx only)")
            try:
                namespace = dict(object.__getattribute__(obj, "__dict__"))
            except AttributeError:
                raise TypeError("vars() argument must have __dict__ attribute") from None
            return {k: runtime._hand_out(v, k) for k, v in namespace.items()
                    if type(k) is str and not k.startswith("__") and (not k.startswith("_") or runtime._own_attribute(obj, k))}

        def type_(*args: Any) -> type:
            if len(args) == 3 and type(args[2]) is dict:  # a class made by a call: the same rules as a class statement
                return runtime.make_class(args[0], tuple(args[1]), dict(args[2]))
            if len(args) != 1:
                raise TypeError("type() takes 1 or 3 arguments")
            return runtime._hand_out(type(graph_nodes.unwrap(args[0])), "type()")

        def help_(*args: Any) -> None:
            """help(obj): its documentation printed (pydoc's text); never help("name"), which imports by name, and
            never the interactive help."""
            import pydoc

            if len(args) != 1 or isinstance(args[0], str):
                raise _refused("help() without an object, or of a name given as a string (help(torch.autograd.Function) is fine)")
            obj = args[0]  # what the cell could not read, help() does not print (a class's data, a module's names)
            if type(obj) is types.ModuleType:
                if obj.__name__ not in MODULES or obj.__name__ in MODULE_ALLOWED_ONLY:
                    raise _refused(f"help() of {_kind(obj)} (help() of one of its functions is fine)")
            elif not runtime._type_allowed(obj if isinstance(obj, type) else type(obj)) \
                    or _type_allow_list(obj) is not None:
                raise _refused(f"help() of {_kind(obj)}")
            print(pydoc.render_doc(args[0], renderer=pydoc.plaintext))

        return {"getattr": getattr_, "hasattr": hasattr_, "setattr": setattr_, "delattr": delattr_, "type": type_,
                "vars": vars_, "help": help_}

    # -- what may be written
    def write(self, obj: Any, name: str | None = None) -> Any:
        if type(obj) is types.ModuleType:
            raise _refused(f"changing the module {obj.__name__}")
        if isinstance(obj, type) and not self._own(obj):
            raise _refused(f"changing the class {obj.__qualname__}")
        if name is not None and name.startswith("_") and (isinstance(obj, type) or not self._own(obj)) \
                and not _ctx_attribute(obj, name):
            raise _refused(f'setting ".{name}" of {_kind(obj)} (underscore attributes are for your own objects)')
        if _type_allow_list(obj) is not None:
            raise _refused(f"changing {_kind(obj)} (use its methods)")
        if name in REFUSED_EVERYWHERE and not self._own(obj):
            raise _refused(f'setting ".{name}"')
        if not self._type_allowed(type(obj)):
            raise _refused(f"changing {_kind(obj)}")
        if name is not None and name in _type_names(type(obj), TYPE_NOT_WRITTEN):
            raise _refused_instead(f'setting ".{name}" of {_kind(obj)} (its memory seen as another type)',
                                   "write a.astype(...), a.reshape(...) or a.view(...) with a numeric type")
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

    # -- %time, %timeit, %matplotlib (policy_compile.CourseTransformer.visit_Call)
    def magic(self, kind: str, name: str, line: str, cell: str) -> Any:
        """The magics a graded cell may use, under the same policy: ``%matplotlib`` does nothing (figures are inline
        already); ``%time``/``%timeit`` run their statement, compiled under the policy, in the notebook's namespace
        and print how long it took (as IPython does, shortened: at most 3 runs of at most a fifth of a second)."""
        import statistics
        import textwrap
        import time

        if name == "matplotlib":
            return None
        source = textwrap.dedent(cell if kind == "cell" else line)
        if name == "timeit":
            source = re.sub(r"^\s*(-[nr]\s*\d+\s+|-[qo]\s+)*", "", source) if kind == "line" else source
        tree = transform(ast.parse(source))
        last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        body = compile(ast.Module(tree.body[:-1] if last else tree.body, []), "<magic>", "exec")
        value = compile(ast.Expression(last.value), "<magic>", "eval") if last else None

        def run() -> Any:
            exec(body, self.namespace)
            return eval(value, self.namespace) if value is not None else None

        if name == "time":
            started, cpu = time.perf_counter(), time.process_time()
            result = run()
            print(f"CPU times: total: {_duration(time.process_time() - cpu)}\n"
                  f"Wall time: {_duration(time.perf_counter() - started)}")
            return result
        started = time.perf_counter()
        run()
        loops = max(1, min(1000, int(0.2 / max(time.perf_counter() - started, 1e-9))))
        times = []
        for _ in range(3):
            started = time.perf_counter()
            for _ in range(loops):
                run()
            times.append((time.perf_counter() - started) / loops)
        print(f"{_duration(statistics.mean(times))} ± {_duration(statistics.pstdev(times))} per loop "
              f"(mean ± std. dev. of 3 runs, {loops} loops each)")
        return None

    # -- match statements (policy_compile.CourseTransformer.visit_Match)
    def match_class(self, cls: Any, fields: list[str]) -> Any:
        """A class a ``case C(...)`` pattern names: the fields its positional patterns read (``__match_args__``) must
        be public, and keyword fields are read from the notebook's own classes only (on ``object``, a keyword pattern
        would read any attribute of any subject past the guards)."""
        if not isinstance(cls, type):
            raise TypeError(f"called match pattern must be a class, not {_kind(cls)}")
        match_args = cls.__dict__.get("__match_args__", ()) if cls in self.classes else getattr(cls, "__match_args__", ())
        if any(type(name) is not str or name.startswith("_") for name in match_args):
            raise _refused(f"a class pattern of {_kind(cls)} (its fields are not public)")
        if fields and not self._own(cls):
            raise _refused(f"keyword fields in a class pattern of {_kind(cls)} (your own classes only; "
                           "compare attributes in the case's `if` instead)")
        return cls

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
            if _array_type(base) or getattr(base, "_policy_stand_in_for", None) is not None:
                # the typed boundary (grader.sandboxed.typed): checks read plain tensors only
                raise _refused(f"a subclass of {_array_type(base) or 'numpy.ndarray'} (return plain tensors and "
                               "arrays)")
            if _type_allow_list(base) is not None:  # its methods would reach, through super(), what the list keeps out
                raise _refused_instead(f"a subclass of {base.__module__}.{base.__qualname__}",
                                       "use its objects as the library makes them")
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


def _duration(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


class _MatchValues:
    """What a match statement's patterns read (dotted names, classes), evaluated through the guards beforehand."""

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)


def _saved_on_node(obj: Any, name: str) -> bool:
    """``grad_fn._saved_self``: what one of PyTorch's graph nodes saved for its backward, read to learn what autograd
    keeps (notebook 3); never ``_raw_saved_*`` (SavedVariable objects, whose hooks outlive the call)."""
    if not name.startswith("_saved_") or name.endswith("_") or not name[7:].replace("_", "").isalnum():
        return False
    graph = sys.modules.get("torch.autograd.graph")
    node = getattr(graph, "Node", None)
    return isinstance(node, type) and isinstance(obj, node) and not isinstance(obj, type)


def _is_ctx(obj: Any) -> bool:
    """A custom Function's ``ctx`` (the node torch made for one call of it)."""
    function = sys.modules.get("torch.autograd.function")
    ctx_type = getattr(function, "FunctionCtx", None)
    return isinstance(ctx_type, type) and isinstance(obj, ctx_type) and not isinstance(obj, type)


def _ctx_attribute(obj: Any, name: str) -> bool:
    """``ctx._name`` a Function's code may keep for its backward (``ctx._has_bias``): a single-underscore name that
    no class of the ctx defines (``_forward_cls``, ``_raw_saved_tensors``, ``_materialize_non_diff_grads`` are
    torch's), on a ctx."""
    if not (name.startswith("_") and not name.startswith("__") and not name.endswith("_") and _is_ctx(obj)):
        return False
    if name.startswith("_pt_") or name in _TORCH_CTX_INSTANCE_NAMES:  # what torch.func keeps on a ctx's instance
        return False
    return not any(name in vars(klass) for klass in type(obj).__mro__) and not hasattr(type(obj), name)


MISSING_LIST = frozenset({"(not computed)"})
_TORCH_CTX_INSTANCE_NAMES = frozenset({"_curr_iter", "_tensors_no_vc_check", "_compiled_autograd_backward_state"})


def _type_allow_list(obj: Any) -> frozenset[str] | None:
    """The names an object of a TYPE_ALLOWED_ONLY library type may be read through (an empty set for the library's
    other types); None for every other object."""
    cls = obj if isinstance(obj, type) else type(obj)
    root = str(getattr(cls, "__module__", "")).split(".")[0]
    if root not in TYPE_ALLOWED_ONLY_ROOTS:
        return None
    for klass in cls.__mro__:
        allowed = TYPE_ALLOWED_ONLY.get(f"{klass.__module__}.{klass.__qualname__}")
        if allowed is not None:
            return allowed
    return frozenset() if root in TYPE_ALLOWED_ONLY_STRICT_ROOTS else None


def _type_names(cls: type, table: dict[str, frozenset[str]]) -> frozenset[str]:
    """The names ``table`` (TYPE_REFUSED, TYPE_NOT_WRITTEN) gives ``cls`` or a class it derives from."""
    names: frozenset[str] = frozenset()
    for klass in getattr(cls, "__mro__", ()):
        found = table.get(f"{getattr(klass, '__module__', '')}.{getattr(klass, '__qualname__', '')}")
        if found:
            names = names | found
    return names


def _instance_attribute(obj: Any, name: str) -> bool:
    """``name`` is in the object's own ``__dict__`` (what the notebook set on it), not its class's."""
    try:
        return name in object.__getattribute__(obj, "__dict__")
    except (AttributeError, TypeError):
        return False


def _tensor_type(cls: type) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(cls, type) and issubclass(cls, torch.Tensor)


def _tensor(obj: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def _tensor_hook(tensor: Any) -> Any:
    """``tensor.register_hook`` for graded code: a hook to look at (or change) the gradient reaching a tensor, as
    notebook 1 shows, except while a check drives the student's Function or the engine runs. A hook registered
    there (on a probe's input, inside ``forward`` or ``backward``) would change what the check reads of the
    student's ``backward``; a hook on the notebook's own tensors cannot reach a check's fresh inputs."""
    from grader.sandboxed.autograd_env import ENGINE

    real = tensor.register_hook

    @functools.wraps(real)
    def register_hook(hook: Any) -> Any:
        if ENGINE.busy():
            from grader.spec.messages import say

            raise PolicyError(say("policy_hook_while_checked"))
        return real(hook)

    return register_hook


def _array_type(base: type) -> str:
    """'torch.Tensor' or 'numpy.ndarray' when ``base`` is one of them or derives from one; else ''."""
    for module, name in (("torch", "Tensor"), ("numpy", "ndarray")):
        root = getattr(sys.modules.get(module), name, None)
        if isinstance(root, type) and issubclass(base, root):
            return f"{module}.{name}"
    return ""


_METHOD_TYPES = (types.BuiltinMethodType, types.MethodDescriptorType)
_FUNCTION_TYPES = (types.FunctionType, types.MethodType)
_GRADER_DIR = str(__file__).rsplit("/sandboxed/", 1)[0] + "/"


def _graders_function(fn: Any) -> bool:
    """A function of the grader's own (a wrapper it put in torch's place: forward_ad.make_dual, Function.apply; a
    check): graded code reads its name and doc, never what else it carries (the engine watch's state was an
    attribute of forward_ad.make_dual: graded code cleared it after asking autograd for a derivative)."""
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None) if type(fn) is types.FunctionType else None
    return code is not None and str(code.co_filename).startswith(_GRADER_DIR)


def _refuse_module(name: str) -> Any:
    raise _refused(f"the module {name}")


def _apply(fn: Any, *args: Any, **kwargs: Any) -> Any:
    for key in kwargs:  # f(**{"__array_interface__": ...}): the compile-time rule of keyword names, at run time
        if type(key) is not str or _private(key):
            raise _refused(f'the keyword argument "{key}"')
    return fn(*args, **kwargs)


def _data_descriptor(value: Any) -> bool:
    return hasattr(type(value), "__set__") or hasattr(type(value), "__delete__")




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
                owner = getattr(obj, "__self__", None)  # Exp.apply: "Exp", not the "Function.apply" it inherits
                name = (getattr(owner, "__qualname__", None) if isinstance(owner, type) else None) \
                    or getattr(obj, "__qualname__", None) or "it"
                from grader.spec.messages import say

                raise PolicyError(message + say("policy_in_cell", name=name), line)


# ---------------------------------------------------------------------------------------------- IPython

class PolicyTransformer(ast.NodeTransformer):
    """Installed in a shell's ``ast_transformers`` while a graded cell compiles: the cell's tree goes through the
    course's policy; a refusal rejects the cell (IPython's ``InputRejected``) with its line.

    It fails closed: IPython unregisters a transformer that raises anything but ``InputRejected`` and then runs the
    cell (and every later one) as it is, so any error here, the policy's own bugs included, rejects the cell."""

    def visit(self, node: Any) -> Any:
        """The tree is transformed in place (a deep copy first cost ~15 % of a graded notebook's sandbox CPU, and
        ~60,000 audited ``id()`` calls); when it is refused or the transform fails, the tree is emptied, so a
        half-transformed tree is never left behind for anyone to compile."""
        from IPython.core.error import InputRejected

        try:
            return transform(node)
        except PolicyError as error:
            _emptied(node)
            raise _rejected(InputRejected, error) from None
        except BaseException as error:  # noqa: BLE001 (fail closed, whatever went wrong)
            _emptied(node)
            if not isinstance(error, Exception):
                raise  # KeyboardInterrupt, SystemExit: nothing of the cell runs either
            refusal = PolicyError(f"the grader could not check this cell ({type(error).__name__}: {error}); "
                                  "nothing of it ran")
            raise _rejected(InputRejected, refusal) from None


def _emptied(node: Any) -> None:
    """Nothing left to run in a refused cell's tree (it may be half transformed)."""
    if isinstance(getattr(node, "body", None), list):
        node.body[:] = []


def _rejected(base: type, error: PolicyError) -> BaseException:
    """An InputRejected that IPython shows as the policy's message, with the refused line."""

    class PolicyRefusal(base):  # type: ignore[misc,valid-type]
        lineno = error.lineno

        def _render_traceback_(self) -> list[str]:
            return error._render_traceback_()

    PolicyRefusal.__name__ = PolicyRefusal.__qualname__ = "PolicyError"
    return PolicyRefusal(str(error))  # the line is the error's lineno (nbgrader's and the grader's messages add it)
