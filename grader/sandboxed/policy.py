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
import operator
import re
import string
import sys
import types
import weakref
from typing import Any

from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence
from RestrictedPython.transformer import IOPERATOR_TO_STR

# The rules (the tables, PolicyError) and the compile time are modules of their own (policy_rules, policy_compile);
# this module is the run time, the self-checks and IPython's hook, and the name the rest of the grader uses.
from grader.sandboxed import graph_nodes  # noqa: E402
from grader.sandboxed.policy_compile import CourseTransformer, check, transform  # noqa: E402,F401
from grader.sandboxed.policy_rules import (ALLOWED_TYPE_ROOTS, CLASS_NAMESPACE_DUNDERS, DUNDER_ATTRIBUTES,  # noqa: E402
                                           IPYTHON_NAMES, MODULE_ALLOWED_ONLY, MODULE_REFUSED, MODULES,
                                           TYPE_ALLOWED_ONLY, TYPE_ALLOWED_ONLY_ROOTS, TYPE_ALLOWED_ONLY_STRICT_ROOTS,
                                           TYPE_NOT_WRITTEN, TYPE_REFUSED, TYPE_REFUSED_NAMES, RC_GROUPS_ALLOWED,
                                           RC_KEYS_REFUSED, BACKENDS_ALLOWED,
                                           NEVER_HANDED_OUT, REFUSED_EVERYWHERE, PolicyError, _allowed_below,
                                           _private, _refused, _refused_instead)


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
        self.allow_lists: dict[type, frozenset[str] | None] = {}  # _type_allow_list, per type (attribute reads are hot)
        self.modules_seen = 0  # len(sys.modules) when special was last brought up to date
        self.stand_in_classes: dict[type, type] = {}  # numpy.ndarray's stand-in, one per notebook (type(a) is np.ndarray)

    def install(self) -> None:
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
        obj = graph_nodes.unwrap(obj)  # a graph node's view reads the node's attributes, by the same rules
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
            if not self._type_allowed(cls):
                raise _refused(f"reading attributes of {_kind(obj)}")
            allowed = self.allow_lists.get(cls, MISSING_LIST)
            if allowed is MISSING_LIST:
                allowed = self.allow_lists[cls] = _type_allow_list(obj)
            if allowed is not None and name not in allowed:
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
        return graph_nodes.hand_out(value, what)

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


def _refuse_module(name: str) -> Any:
    raise _refused(f"the module {name}")


def _kind(obj: Any) -> str:
    if type(obj) is types.ModuleType:
        return f"the module {obj.__name__}"
    t = type(obj)
    return f"a {getattr(t, '__module__', '?')}.{getattr(t, '__qualname__', t.__name__)} object"


def _apply(fn: Any, *args: Any, **kwargs: Any) -> Any:
    for key in kwargs:  # f(**{"__array_interface__": ...}): the compile-time rule of keyword names, at run time
        if type(key) is not str or _private(key):
            raise _refused(f'the keyword argument "{key}"')
    return fn(*args, **kwargs)


def _data_descriptor(value: Any) -> bool:
    return hasattr(type(value), "__set__") or hasattr(type(value), "__delete__")


def _stand_ins(runtime: Runtime) -> list[tuple[Any, Any]]:
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

    def itemgetter(*items: Any) -> Any:
        """operator.itemgetter whose items are read through the policy's item guard."""
        if len(items) == 1:
            return lambda obj: runtime.getitem(obj, items[0])
        return lambda obj: tuple(runtime.getitem(obj, item) for item in items)

    def basic_config(**kwargs: Any) -> None:
        """logging.basicConfig with %-style formats only (a "{" format walks attributes of what is logged), and no
        file (filename= writes any file)."""
        if kwargs.get("style", "%") != "%" or "handlers" in kwargs:
            raise _refused('logging.basicConfig with style= or handlers= (a "%(message)s" format is fine)')
        if "filename" in kwargs or "filemode" in kwargs:
            raise _refused_instead("logging.basicConfig(filename=...) (a file written)",
                                   "log to the output: logging.basicConfig(level=..., format=...)")
        logging.basicConfig(**kwargs)

    import logging

    functools.update_wrapper(update_wrapper, functools.update_wrapper)
    functools.update_wrapper(wraps, functools.wraps)
    functools.update_wrapper(itemgetter, operator.itemgetter)
    functools.update_wrapper(basic_config, logging.basicConfig)
    stand_ins = {functools.update_wrapper: update_wrapper, functools.wraps: wraps,
                 types.SimpleNamespace: _SimpleNamespace, operator.itemgetter: itemgetter,
                 logging.basicConfig: basic_config}
    stand_ins.update(_copy_stand_ins(runtime))
    stand_ins.update(_display_stand_ins())
    stand_ins.update(_memory_stand_ins())
    stand_ins.update(_ndarray_stand_in(runtime))
    stand_ins.update(_parameter_dict_stand_in(runtime))
    for name in ("tqdm", "tqdm.auto"):  # once a cell imported them
        module = sys.modules.get(name)
        if module is not None and isinstance(getattr(module, "tqdm", None), type):
            bar = _progress_bar(module.tqdm, runtime.progress_bars)
            stand_ins[module.tqdm] = bar
            stand_ins[module.trange] = functools.update_wrapper(lambda *args, **kwargs: bar(range(*args), **kwargs),
                                                                module.trange)
    return [*stand_ins.items(), *_matplotlib_stand_ins()]  # (rcParams is a dict: unhashable)


# Modules whose callables Runtime hands out as stand-ins (recomputed when one of them is first imported)
STAND_IN_MODULES = ("matplotlib", "matplotlib.pyplot", "matplotlib.ticker", "tqdm", "tqdm.auto", "copy", "numpy",
                    "torch", "IPython.display")
# What copy may walk into without a look (they hold no attributes a reducer would read)
_COPY_ATOMIC = (type(None), bool, int, float, complex, str, bytes, type, range, types.FunctionType,
                types.BuiltinFunctionType)
_COPY_WALK_LIMIT = 1_000_000
# what functools.wraps sets on an object of the notebook's (copy reads none of them)
_WRAPPER_NAMES = frozenset({*functools.WRAPPER_ASSIGNMENTS, "__wrapped__"})
# what copy and deepcopy call when an object has it (looked up on the object, not only on its class)
_REDUCTION_NAMES = ("__deepcopy__", "__copy__", "__reduce_ex__", "__reduce__", "__getstate__", "__setstate__",
                    "__getnewargs_ex__", "__getnewargs__")


def _copy_stand_ins(runtime: Runtime) -> dict[Any, Any]:
    """copy.copy(x) and copy.deepcopy(x) for graded cells. No memo: deepcopy's memo keeps the originals it copied
    alive in memo[id(memo)], the real ``__dict__`` of every object among them, and a dict key written there
    (``__array_interface__``, ``__reduce_ex__``) is an attribute no guard saw set. And no object whose copy would
    run a reduction of the notebook's choosing: an instance attribute named like ``__x__`` (``__reduce_ex__``,
    ``__deepcopy__``, ``__setstate__`` ... would make copy call it, then set any attribute of any object, modules
    included). The notebook's classes cannot define those methods (SPECIAL_METHODS), so what is copied is rebuilt by
    its library type's own reduction."""
    import copy

    if "copy" not in sys.modules:
        return {}

    def copy_(*args: Any, **kwargs: Any) -> Any:
        if len(args) != 1 or kwargs:
            raise _refused_instead("copy.copy with more than the object", "write copy.copy(x)")
        _check_copied(args[0], deep=False)
        return copy.copy(args[0])

    def deepcopy_(*args: Any, **kwargs: Any) -> Any:
        if len(args) != 1 or kwargs:
            raise _refused_instead("copy.deepcopy(x, memo)", "write copy.deepcopy(x) (the memo is copy's own)")
        _check_copied(args[0], deep=True)
        return copy.deepcopy(args[0])

    functools.update_wrapper(copy_, copy.copy)
    functools.update_wrapper(deepcopy_, copy.deepcopy)
    return {copy.copy: copy_, copy.deepcopy: deepcopy_}


def _check_copied(x: Any, deep: bool) -> None:
    """Refuses (PolicyError) when copying ``x`` would call a reduction the notebook chose: one an object carries as
    an instance attribute, or one a library's ``__getattr__`` finds for it (``module.add_module("__deepcopy__",
    thief)``: nn.Module's registries answer any name). With ``deep``, for every object deepcopy would visit: through
    containers, instance dicts and slots, object arrays, partials, bound methods and the library reductions
    themselves."""
    seen: set[int] = set()
    todo = [x]
    while todo:
        obj = todo.pop()
        if isinstance(obj, _COPY_ATOMIC) or id(obj) in seen:
            continue
        seen.add(id(obj))
        if len(seen) > _COPY_WALK_LIMIT:
            raise _refused("copying more than a million objects at once")
        cls = type(obj)
        try:
            namespace = object.__getattribute__(obj, "__dict__")
        except Exception:  # noqa: BLE001 (no instance dict)
            namespace = None
        if type(namespace) is dict:
            for key in namespace:
                if type(key) is not str or (key.startswith("__") and key.endswith("__") and key not in _WRAPPER_NAMES):
                    raise _refused(f"copying {_kind(obj)} with an instance attribute named {key!r} (attributes "
                                   "named like __x__ would change how copy rebuilds it)")
        mro = getattr(cls, "__mro__", (cls,))
        for name in _REDUCTION_NAMES:
            if not any(name in vars(klass) for klass in mro):
                try:
                    found = hasattr(obj, name)
                except Exception:  # noqa: BLE001
                    found = False
                if found:
                    raise _refused(f"copying {_kind(obj)}, which answers {name} though its class has none (a name "
                                   "of its registry: copy would call it)")
        if not deep:
            continue
        if type(namespace) is dict:
            todo.extend(namespace.values())
        if isinstance(obj, dict):
            todo.extend(dict.keys(obj))
            todo.extend(dict.values(obj))
            continue
        if isinstance(obj, (list, tuple, set, frozenset)):
            todo.extend(list(obj))
            continue
        for klass in mro:
            slots = vars(klass).get("__slots__", ())
            for slot in (slots,) if isinstance(slots, str) else slots:
                try:
                    todo.append(object.__getattribute__(obj, slot))
                except Exception:  # noqa: BLE001
                    pass
        if isinstance(obj, functools.partial):
            todo.extend((obj.func, obj.args, obj.keywords))
        elif isinstance(obj, types.MethodType):
            todo.extend((obj.__self__, obj.__func__))
        numpy = sys.modules.get("numpy")
        if numpy is not None and isinstance(obj, numpy.ndarray):
            if obj.dtype.hasobject:
                todo.extend(obj.ravel().tolist())
            continue
        if any("__deepcopy__" in vars(klass) for klass in mro):
            continue  # a library's own __deepcopy__ (a tensor's) copies its __dict__, walked above
        try:  # what copy's _reconstruct would deep-copy: the library's own reduction's arguments and state
            reduced = obj.__reduce_ex__(4)
        except Exception:  # noqa: BLE001 (deepcopy fails the same way)
            continue
        if isinstance(reduced, tuple):
            for part in reduced[1:3]:
                todo.append(part)
            for part in reduced[3:5]:
                if part is not None:
                    try:
                        todo.append(list(part))
                    except Exception:  # noqa: BLE001
                        pass


def _display_stand_ins() -> dict[Any, Any]:
    """IPython.display's HTML, Markdown, Math and Latex made from the text given, never from a file or a URL (given
    as filename=/url=, or as a text that names an existing file: IPython reads it and the output shows it)."""
    display = sys.modules.get("IPython.display")
    if display is None:
        return {}
    stand_ins: dict[Any, Any] = {}
    for name in ("HTML", "Markdown", "Math", "Latex"):
        real = getattr(display, name, None)
        if not isinstance(real, type):
            continue

        def made(data: Any = None, metadata: Any = None, *, _real: type = real, _name: str = name,
                 **kwargs: Any) -> Any:
            if kwargs:
                raise _refused_instead(f"{_name}({', '.join(f'{k}=' for k in kwargs)}...) (a file or URL read)",
                                       f"give {_name}() the text to show")
            if data is not None and type(data) is not str:
                raise _refused_instead(f"{_name}() of {_kind(data)}", f"give {_name}() the text to show")
            obj = _real(None, metadata=metadata)
            obj.data = data
            return obj

        stand_ins[real] = functools.update_wrapper(made, real, updated=())
    return stand_ins


def _memory_stand_ins() -> dict[Any, Any]:
    """Arrays over memory of the caller's choosing, refused by construction: ``numpy.ndarray(...)`` itself is never
    called (its stand-in is the type for isinstance and attribute reads, refusing calls: buffer= over another
    object array's pointers, or object dtype over bytes, fakes object pointers); ``numpy.frombuffer`` and
    ``torch.frombuffer`` read ``bytes`` and ``bytearray`` only (an object array's buffer is its pointers)."""
    stand_ins: dict[Any, Any] = {}
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        def frombuffer(buffer: Any, dtype: Any = float, *args: Any, **kwargs: Any) -> Any:
            if type(buffer) not in (bytes, bytearray):
                raise _refused_instead(f"numpy.frombuffer of {_kind(buffer)}",
                                       "frombuffer reads bytes or a bytearray; for an array write np.array(a) or "
                                       "a.astype(...)")
            if numpy.dtype(dtype).hasobject:
                raise _refused_instead("numpy.frombuffer with an object dtype", "objects are not made from bytes: "
                                       "write np.array(values, dtype=object)")
            return numpy.frombuffer(buffer, dtype, *args, **kwargs)

        stand_ins[numpy.frombuffer] = functools.update_wrapper(frombuffer, numpy.frombuffer)
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "frombuffer"):
        def torch_frombuffer(buffer: Any, *args: Any, **kwargs: Any) -> Any:
            if type(buffer) not in (bytes, bytearray):
                raise _refused_instead(f"torch.frombuffer of {_kind(buffer)}",
                                       "frombuffer reads bytes or a bytearray; for an array write torch.from_numpy(a) "
                                       "or torch.tensor(a)")
            return torch.frombuffer(buffer, *args, **kwargs)

        stand_ins[torch.frombuffer] = functools.update_wrapper(torch_frombuffer, torch.frombuffer)
    return stand_ins


class _CallRefused(type):
    """The metaclass of a library type's stand-in that may be named, tested and read, never called."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, cls._policy_stand_in_for)

    def __subclasscheck__(cls, sub: Any) -> bool:
        if isinstance(sub, _CallRefused):  # issubclass(type(a), np.ndarray): both are stand-ins
            sub = sub._policy_stand_in_for
        return issubclass(sub, cls._policy_stand_in_for)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        raise _refused_instead(*cls._policy_refusal)

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(cls._policy_stand_in_for, name)


def _ndarray_stand_in(runtime: Runtime) -> dict[Any, Any]:
    numpy = sys.modules.get("numpy")
    if numpy is None:
        return {}
    real = numpy.ndarray
    made = runtime.stand_in_classes.get(real)
    if made is None:
        made = _CallRefused("ndarray", (), {
            "__module__": "numpy", "__qualname__": "ndarray", "__doc__": real.__doc__, "_policy_stand_in_for": real,
            "_policy_refusal": ("calling numpy.ndarray(...) (an array over memory of its caller's choosing)",
                                "write np.zeros(shape), np.empty(shape), np.array(values) or np.asarray(values); "
                                "isinstance(a, np.ndarray) is fine")})
        runtime.stand_in_classes[real] = made
    return {real: made}


def _parameter_dict_stand_in(runtime: Runtime) -> dict[Any, Any]:
    """torch.nn.ParameterDict for graded cells: its keys become attributes (``setattr(self, key, value)``, any value
    that is not a tensor kept as it is), so they follow the rule of names: ``pd["__array_interface__"] = {...}`` made
    numpy.asarray(pd) read any address. Every road in (the constructor, update, setdefault, |, |=, copy, fromkeys)
    goes through its __setitem__."""
    nn = sys.modules.get("torch.nn")
    real = getattr(nn, "ParameterDict", None)
    if not isinstance(real, type):
        return {}
    made = runtime.stand_in_classes.get(real)
    if made is None:
        from collections import OrderedDict

        def __setitem__(self: Any, key: Any, value: Any) -> None:
            if type(key) is not str or _private(key):
                raise _refused_instead(f"a ParameterDict key {key!r} (its keys become attributes)",
                                       "name parameters with plain names")
            real.__setitem__(self, key, value)

        def copy(self: Any) -> Any:
            return made(OrderedDict((k, self[k]) for k in self._keys))

        def fromkeys(self: Any, keys: Any, default: Any = None) -> Any:
            return made((k, default) for k in keys)

        def __or__(self: Any, other: Any) -> Any:
            result = self.copy()
            result.update(other)
            return result

        def __ror__(self: Any, other: Any) -> Any:
            result = made(other)
            result.update(self)
            return result

        def __ior__(self: Any, other: Any) -> Any:
            self.update(other)
            return self

        made = type(real.__name__, (real,), {
            "__setitem__": __setitem__, "copy": copy, "fromkeys": fromkeys, "__or__": __or__, "__ror__": __ror__,
            "__ior__": __ior__, "__module__": real.__module__, "__qualname__": real.__qualname__,
            "__doc__": real.__doc__})
        runtime.stand_in_classes[real] = made
    return {real: made}


class _RcParams(dict):  # (a dict for matplotlib's own readers; every write goes through __setitem__ or update)
    """matplotlib.rcParams for graded cells: reads as the real one; sets plotting keys only (RC_GROUPS_ALLOWED)."""

    def __init__(self, real: Any) -> None:
        super().__init__()
        self._real = real

    def __getitem__(self, key: Any) -> Any:
        return self._real[key]

    def get(self, key: Any, default: Any = None) -> Any:
        return self._real.get(key, default)

    def __contains__(self, key: Any) -> bool:
        return key in self._real

    def __iter__(self) -> Any:
        return iter(self._real)

    def __len__(self) -> int:
        return len(self._real)

    def keys(self) -> Any:
        return self._real.keys()

    def values(self) -> Any:
        return self._real.values()

    def items(self) -> Any:
        return self._real.items()

    def copy(self) -> Any:
        return dict(self._real)

    def __repr__(self) -> str:
        return repr(self._real)

    def __setitem__(self, key: Any, value: Any) -> None:
        if type(key) is not str or key.split(".")[0] not in RC_GROUPS_ALLOWED or key in RC_KEYS_REFUSED:
            raise _refused_instead(f"setting rcParams[{key!r}]", "graded code sets plotting keys only "
                                   "(figure.figsize, font.size, axes.grid, lines.linewidth ...)")
        self._real[key] = value

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __delitem__(self, key: Any) -> None:
        raise _refused("deleting an rcParams key")

    def pop(self, *args: Any) -> Any:
        raise _refused("deleting an rcParams key")

    def popitem(self) -> Any:
        raise _refused("deleting an rcParams key")

    def clear(self) -> None:
        raise _refused("deleting an rcParams key")

    def setdefault(self, key: Any, default: Any = None) -> Any:
        raise _refused("rcParams.setdefault (write rcParams[key] = value)")


_RcParams.__module__ = "matplotlib"
_RcParams.__name__ = _RcParams.__qualname__ = "RcParams"


def _matplotlib_stand_ins() -> list[tuple[Any, Any]]:
    """matplotlib.use with a non-interactive backend's name only (``"module://x"`` imports any module), and
    rcParams that sets plotting keys only (``"backend"`` and ``"figure.hooks"`` import modules by name)."""
    matplotlib = sys.modules.get("matplotlib")
    if matplotlib is None or not hasattr(matplotlib, "rcParams"):
        return []

    def use(backend: Any, *, force: bool = True) -> None:
        if type(backend) is not str or backend.lower() not in BACKENDS_ALLOWED:
            raise _refused_instead(f"matplotlib.use({backend!r}) (a backend by module name imports that module)",
                                   "write matplotlib.use('Agg'), or %matplotlib inline")
        matplotlib.use(backend, force=force)

    functools.update_wrapper(use, matplotlib.use)
    return [(matplotlib.use, use), (matplotlib.rcParams, _RcParams(matplotlib.rcParams))]


def _progress_bar(real: type, made_before: dict[type, type]) -> type:
    """tqdm's class for graded cells: no ``bar_format`` (a str.format template over the bar's fields, which walks
    attributes), and no monitor thread (threads are refused in the sandbox, and their start is flagged). One per
    notebook (``made_before`` is the Runtime's: a module-level cache would be a grader table the guard puts back)."""
    made = made_before.get(real)
    if made is not None:
        return made
    real.monitor_interval = 0  # type: ignore[attr-defined]

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("bar_format") is not None:
            raise _refused("tqdm(bar_format=...) (desc=, unit= and set_postfix() are fine)")
        real.__init__(self, *args, **kwargs)  # type: ignore[misc]

    made = type(real.__name__, (real,), {"__init__": __init__, "__module__": real.__module__,
                                         "__qualname__": real.__qualname__, "__doc__": real.__doc__})
    made_before[real] = made
    return made


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
