"""The library callables and types graded code gets as stand-ins (``Runtime._hand_out``): what a cell may call of
``copy``, NumPy's raw-memory constructors, ``torch.nn.ParameterDict``, matplotlib's ``rcParams`` and backends,
IPython's displays, tqdm's bars and ``str.format``, each doing what honest code asks of the original and nothing
that reads, writes or reaches past the policy's guards (``grader.sandboxed.policy``'s docstring says why a policy).
A module of its own because it is the part of the policy that grows with the libraries a course allows; the rules
are ``grader.sandboxed.policy_rules``, the guards ``grader.sandboxed.policy``.
"""

from __future__ import annotations

import functools
import operator
import string
import sys
import types
from typing import Any

from RestrictedPython.transformer import IOPERATOR_TO_STR

from grader.sandboxed.policy_rules import (BACKENDS_ALLOWED, RC_GROUPS_ALLOWED, RC_KEYS_REFUSED, _kind,
                                           _private, _refused, _refused_instead)

Runtime = Any  # grader.sandboxed.policy.Runtime (which imports this module): the guards these stand-ins call back


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
    stand_ins.update(_graph_stand_ins())
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


def _graph_stand_ins() -> dict[Any, Any]:
    """``torch.autograd.graph.get_gradient_edge`` whose edge holds views of its nodes (``grader.sandboxed.graph_nodes``):
    the edge is a tuple, and the guards see attribute reads and items, never iteration (``node, *_ = edge``, ``zip``,
    a ``match`` pattern): torch's own edge handed out the node itself, to call as a function (PyTorch's derivative
    formula)."""
    graph = sys.modules.get("torch.autograd.graph")
    real = getattr(graph, "get_gradient_edge", None)
    if real is None or not isinstance(getattr(graph, "GradientEdge", None), type):
        return {}
    from grader.sandboxed.graph_nodes import is_node, view

    def get_gradient_edge(tensor: Any) -> Any:
        edge = real(tensor)
        return graph.GradientEdge(*(view(part) if is_node(part) else part for part in edge))

    return {real: functools.update_wrapper(get_gradient_edge, real)}


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
            self.disable = True  # (tqdm's __del__ closes even a bar never made: it reads this first)
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
