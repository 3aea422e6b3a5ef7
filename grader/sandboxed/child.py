"""The sandboxed side of trusted grading: run a notebook's cells, and observe where test cells stood.

``run_cells(plan, address)`` executes the plan in this process (forked by ``grader.sandboxed.worker`` for each notebook):
PLAN holds the notebook's code cells in order; where an instructor's test cell stood it holds the check
calls parsed from it (``grader.judge.testcells``), never its code. For each one it evaluates the function under
test in the notebook's namespace, records observations (``grader.sandboxed.observe``) and reports one JSON message.

How the observations stay the observer's, with untrusted code in the same process:
- **The channel cannot be spoken for.** Messages go on one connection to the worker, opened before any
  student code runs, close-on-exec, and signed with a key only the reporter's closure holds; the worker then
  stops listening and keeps only signed lines the kernel says this process wrote (``grader.boundary.channel``: what
  holds against exec, fork and the notebook's own writes). The seccomp filter refuses threads, so nothing
  runs beside the reporter while it sends. A report that cannot be sent ends the notebook
  (``CHANNEL_BROKEN``): a flag is never dropped.
- **Originals are guarded around every call into student code.** Before student code runs, this module
  keeps torch's, the grader's, json's, os' and builtins' namespaces (and the code, defaults and closures of
  the grader's functions); they are put back before each observation and again after every return from the
  student's code during it (its function, its Functions' forward, backward and jvp), so a forward that
  re-patches ``torch.autograd.grad`` mid-observation changes nothing the observer uses.
- **What cannot be blocked inside one process is made visible.** An audit hook (``sys.addaudithook``:
  it cannot be removed) reports what no honest answer needs, as a flag for the instructor: ``gc`` walks,
  frames of student or grader code, ctypes, sockets, other processes' files under /proc, trace hooks,
  new audit hooks. The trusted side scores the checks observed from then on 0 and lists the flag.

This process decides nothing: the trusted side judges.
"""

from __future__ import annotations

import _socket
import builtins
import dataclasses
import itertools
import json
import operator
import os
import socket
import sys
import threading
import traceback
from typing import Any, Callable

import torch
import torch.autograd.function as autograd_function

import torch._dynamo  # noqa: F401  (torch.func imports it lazily, and it rebinds torch.manual_seed: before the guard)
import torch._export.utils
import torch._functorch.eager_transforms
import torch._functorch.predispatch
import torch._functorch.pyfunctorch
import torch.autograd.forward_ad
import torch.autograd.profiler
import torch.func

torch._functorch.predispatch.lazy_load_decompositions()  # vmap loads them on first use: once, here, before the guard

from grader.spec import exercises, messages, registry
from grader.sandboxed import observe, observe_functions, policy
from grader.sandboxed.audit import ALWAYS_FLAGGED, JUDGED_BY_ARGUMENTS, QUIET_EVENTS_KEPT, suspicion  # noqa: F401
from grader.sandboxed.guarded import LIBRARY_REBINDS, TABLES_UNGUARDED, grader_modules, reached
from grader.sandboxed.shell import NEEDS_IPYTHON_TRANSFORMS, Outputs, make_shell  # noqa: F401  (worker, tests)
from grader.boundary import wire
from grader.spec.exercises import get

MISSING = object()
CHANNEL_BROKEN = 86  # exit status of a child whose report could not be sent (grader.sandboxed.worker, grader.judge.runner read it)
MAC_HEX = 32  # hex characters of a line's HMAC kept: grader.boundary.channel.MAC_BYTES

# What torch.func's transforms (jvp, vmap, grad) and forward mode (dual tensors) run through, down to the C
# functions and classes they call: the checks of notebook 4 observe through all of it. (Their config modules
# change legitimately; AOT autograd is not used in eager mode.)
FUNCTORCH_PREFIXES = ("torch._functorch", "torch.func", "torch.autograd", "torch.utils._pytree", "torch._export.utils",
                      "torch.overrides")


def functorch_namespaces() -> list[Any]:
    """Those namespaces, among the modules imported by now (the worker's warm-up imports torch.func's lazy ones)."""
    modules = sorted((module for name, module in list(sys.modules.items())
                      if name.startswith(FUNCTORCH_PREFIXES) and not name.endswith(".config")
                      and "._aot_autograd" not in name and type(module).__name__ == "module"),
                     key=lambda module: module.__name__)
    return [*modules, torch._VF, torch._C._functorch, torch._C._functorch.CInterpreter,
            torch._C._functorch.TransformType]


# Namespaces whose every entry is put back (module dicts; class dicts for classes); the Guard adds torch.func's.
GUARDED_NAMESPACES: list[Any] = [
    builtins, torch, torch.Tensor, torch.autograd, autograd_function, torch.autograd.graph,
    torch.autograd.gradcheck, torch.nn.functional, json, os, socket, autograd_function.Function,
    autograd_function.BackwardCFunction, torch.autograd.graph.saved_tensors_hooks,
]  # and every module of grader_modules()
# Names torch itself rebinds while running, not the notebook: set_default_dtype rebinds torch.Storage, and
# forward_ad.dual_level() keeps the current level in a module global (putting it back mid-observation breaks forward
# mode: "Dual level must be a positive number").
REBOUND_BY_TORCH = frozenset({
    (torch, "Storage"), (torch.autograd.forward_ad, "_current_level"),
    (torch._functorch.eager_transforms, "JVP_NESTING"),  # torch.func.jvp's nesting depth
    (torch.autograd.graph, "_allow_mutation_on_saved_tensors_enabled"),
    (torch.autograd.profiler, "_is_profiler_enabled"), (torch.autograd.profiler, "_cupti_monitor_checked"),
    (torch.autograd.profiler, "_cupti_monitor_module"), (torch._export.utils, "_DISABLE_ATEN_TO_ASSERTION_PASS"),
})
# Where an added name matters (it shadows a builtin or a base class's method): additions are removed there.
# Elsewhere (torch's packages) an addition is usually a submodule imported later, which must stay.
# torch._VF finds its functions through __getattr__: anything in its dict was put there. Anywhere, an added name that
# shadows a builtin (`isinstance`, `len` ...) for the module's own functions is removed too.
ADDITIONS_REMOVED = (builtins, torch._VF)  # and every module of grader_modules()
BUILTIN_NAMES = frozenset(vars(builtins))



def _grader_classes() -> list[type]:
    """The classes the grader's modules define (probes, Exercise, the Guard itself ...): a notebook reaches them as
    ``grader.<module>.<name>``, so their dicts are guarded like torch's classes."""
    return [value for module in grader_modules(__name__ == "__main__") for value in vars(module).values()
            if isinstance(value, type) and value.__module__ == module.__name__]


def _grader_functions() -> list[Any]:
    """The grader's functions and its classes' methods: their code, defaults and closures are put back."""
    found = []
    for module in grader_modules(__name__ == "__main__"):
        for value in vars(module).values():
            if getattr(value, "__module__", None) == module.__name__ and hasattr(value, "__code__"):
                found.append(value)
    for cls in _grader_classes():
        for value in vars(cls).values():
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            parts = (value.fget, value.fset, value.fdel) if isinstance(value, property) else (value,)
            found += [part for part in parts if type(part) is type(_cell_filled)]
    return found


def _grader_tables() -> list[Any]:
    """The grader's tables (its modules' dicts and lists: registries of checks, observers, exercises, patterns) and
    the frozen dataclasses they hold (object.__setattr__ changes those all the same): containers whose contents a
    notebook could change in place, where the guard's identity check of module attributes sees nothing."""
    tables: list[Any] = []
    for module in grader_modules(__name__ == "__main__"):
        if module.__name__ in TABLES_UNGUARDED:
            continue
        for value in list(vars(module).values()):
            if type(value) in (dict, list):
                tables.append(value)
                items = value.values() if type(value) is dict else value
                tables += [vars(item) for item in items if dataclasses.is_dataclass(item) and not isinstance(item, type)]
    return tables


def _unique(objects: list[Any]) -> list[Any]:
    """``objects`` without repeats, by identity (no ``__eq__``/``__hash__`` of theirs runs)."""
    seen: set[int] = set()
    return [o for o in objects if not (id(o) in seen or seen.add(id(o)))]  # type: ignore[func-returns-value]


def _cell_filled(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


class Guard:
    """The originals of everything observing relies on; ``restore()`` puts them back and says what changed.

    ``restore`` runs after every return from student code during an observation (a second-order check of a
    notebook calls it thousands of times), so its common case, nothing changed, costs ~100 integer reads (the
    guarded dicts' versions) and one identity pass over the few objects no version covers (list tables, closure
    cells). When dicts were written (torch writes a few of its own globals in forward mode and in torch.func's
    transforms), only those are compared with their originals.

    The work is done by ``restorer``, a closure made here (``_restorer``) over everything it reads: a notebook reaches
    this class and its methods as ``grader.sandboxed.child.Guard``, and could change their code, or the classes whose methods
    they call (ctypes' c_uint64.value included); it cannot reach the closure without frames or gc, which are flagged."""

    def __init__(self, extra_functions: list[Any] = (), code_writes: list[bool] | None = None) -> None:  # type: ignore[assignment]
        """``code_writes``: a one-item list the audit hook sets to True when any function's ``__code__``,
        ``__defaults__`` or ``__kwdefaults__`` is written (those writes raise audit events, and reading ``__code__``
        raises one too, so reading 180 functions' code after every return from student code would cost ~0.2 ms
        of hook calls). Without it, every restore compares them."""
        self.code_writes = code_writes
        self.namespaces = []
        modules = grader_modules(__name__ == "__main__")
        # what those modules reach through their tables and closures, and the libraries they call into (guarded.reached)
        reached_functions, reached_tables, libraries = reached(modules, TABLES_UNGUARDED)
        rebinds = REBOUND_BY_TORCH | {(sys.modules[name], key) for name, keys in LIBRARY_REBINDS.items()
                                      if name in sys.modules for key in keys}
        owners = [*GUARDED_NAMESPACES, *modules, *functorch_namespaces(), *_grader_classes(), *libraries,
                  sys.modules[__name__]]
        for owner in [owner for k, owner in enumerate(owners) if not any(o is owner for o in owners[:k])]:
            kept = {k: v for k, v in vars(owner).items() if (owner, k) not in rebinds}
            strict = isinstance(owner, type) or owner in ADDITIONS_REMOVED or any(m is owner for m in modules)
            rebound = tuple(k for o, k in rebinds if o is owner)
            self.namespaces.append([owner, kept, strict, rebound])
        functions = _unique([*_grader_functions(), *reached_functions, *extra_functions])
        self.functions = functions
        self.codes = [(fn.__code__, fn.__defaults__, fn.__kwdefaults__) for fn in functions]
        self.cells = [c for fn in functions for c in (fn.__closure__ or ()) if _cell_filled(c)]
        self.cell_owners = [f"{fn.__module__}.{fn.__qualname__}" for fn in functions
                            for c in (fn.__closure__ or ()) if _cell_filled(c)]
        self.cell_values = [c.cell_contents for c in self.cells]
        # What restore() itself runs on: the builtins and this module's globals. Put back first.
        here = sys.modules[__name__]
        self.first = [(builtins.__dict__, dict(builtins.__dict__), "builtins"),
                      (here.__dict__, dict(here.__dict__), here.__name__)]
        self.tables = [(table, dict(table) if type(table) is dict else list(table))
                       for table in _unique([*_grader_tables(), *reached_tables])]
        self.restorer = _restorer(self)

    def restore(self) -> list[str]:
        return self.restorer()

    def add_functions(self, extra: list[Any]) -> None:
        """Guard these functions too (closures made after the snapshot: the child's reporter and audit hook): their
        code, defaults and closure cells as they are now. The restorer is made again, over everything."""
        functions = [fn for fn in _unique(extra) if not any(fn is known for known in self.functions)]
        self.functions += functions
        self.codes += [(fn.__code__, fn.__defaults__, fn.__kwdefaults__) for fn in functions]
        filled = [(fn, c) for fn in functions for c in (fn.__closure__ or ()) if _cell_filled(c)]
        self.cells += [c for _, c in filled]
        self.cell_owners += [f"{fn.__module__}.{fn.__qualname__}" for fn, _ in filled]
        self.cell_values += [c.cell_contents for _, c in filled]
        self.restorer = _restorer(self)


def _restorer(guard: Guard) -> Callable[[], list[str]]:
    """The guard's restore, as a closure over everything it reads, taken now (before any notebook code runs):
    the guard's lists, C functions and methods (no builtin looked up by name when it runs, no Python method of a
    class a notebook can reach). Order matters: the builtins and this module's globals first, then the code of the
    grader's functions (``_restore`` below calls nothing else of the grader's), then the dicts written since the last
    call, by their versions, then the list tables and closure cells."""
    list_, map_, any_, all_, zip_, sum_, len_ = list, map, any, all, zip, sum, len
    operator_is = operator.is_
    is_not, ne = operator.is_not, operator.ne
    compress, count, chain, from_iterable = itertools.compress, itertools.count, itertools.chain, itertools.chain.from_iterable
    dict_update, dict_clear, dict_setitem, dict_delitem = dict.update, dict.clear, dict.__setitem__, dict.__delitem__
    list_setitem, type_setattr, type_delattr = list.__setitem__, type.__setattr__, type.__delattr__
    get_code = operator.attrgetter("__code__", "__defaults__", "__kwdefaults__")
    contents = operator.attrgetter("cell_contents")
    value_error, missing, builtin_names = ValueError, MISSING, BUILTIN_NAMES

    first, functions, codes, code_writes = guard.first, guard.functions, guard.codes, guard.code_writes
    cells, cell_values, cell_owners = guard.cells, guard.cell_values, guard.cell_owners
    list_tables = [(t, kept) for t, kept in guard.tables if type(t) is not dict]
    dict_tables = [(t, kept) for t, kept in guard.tables if type(t) is dict]
    names = [getattr(owner, "__name__", str(owner)) for owner, _, _, _ in guard.namespaces]
    # every guarded dict (each namespace's, each dict table), with what puts it back: (kind, index)
    dicts, targets = [], []
    for k, (owner, _, _, _) in enumerate(guard.namespaces):
        for d in _real_dicts(vars(owner)):
            dicts.append(d)
            targets.append(("namespace", k))
    for k, (table, _) in enumerate(dict_tables):
        dicts.append(table)
        targets.append(("table", k))
    # the tags of all those dicts read in one C call each (no ctypes object, nothing a notebook can patch)
    read_tags = _DictVersions.reader(dicts)
    read_first_tags = _DictVersions.reader([namespace for namespace, _, _ in first])
    if read_tags is None or read_first_tags is None:
        read_tags = read_first_tags = tuple
        everything = list(range(len(targets)))
    else:
        everything = None
    namespaces = guard.namespaces
    mappings = [vars(owner) for owner, _, _, _ in namespaces]  # a class's mappingproxy, kept, stays live
    is_class = [isinstance(owner, type) for owner, _, _, _ in namespaces]
    kept_versions = [read_tags()]
    kept_first = [read_first_tags()]
    list_objects = [t for t, _ in list_tables]

    def others() -> tuple[list[int], tuple[Any, ...]]:
        return (list_(map_(len_, list_objects)),
                tuple(chain(from_iterable(list_objects), map_(contents, cells))))

    kept_lengths, kept_others = others()

    def put(k: int, key: str, value: Any) -> None:
        owner = namespaces[k][0]
        if is_class[k]:
            if value is missing:
                type_delattr(owner, key)
            else:
                type_setattr(owner, key, value)
        elif value is missing:
            dict_delitem(mappings[k], key)
        else:
            dict_setitem(mappings[k], key, value)

    def put_back_namespace(k: int, replaced: list[str]) -> None:
        entry = namespaces[k]
        _, kept, strict, rebound = entry
        current = mappings[k]
        present = sum_(1 for key in rebound if key in current)
        if len_(current) - present == len_(kept) and not any_(map_(is_not, map_(current.get, kept), kept.values())):
            return  # written back to the same objects (or only torch's own rebinding)
        for key in [key for key in current if key not in kept and key not in rebound]:
            if strict or key in builtin_names:
                replaced.append(f"{names[k]}.{key} (added)")
                put(k, key, missing)
        for key, value in kept.items():
            if current.get(key, missing) is not value:
                replaced.append(f"{names[k]}.{key}")
                put(k, key, value)
        if len_(current) - sum_(1 for key in rebound if key in current) != len_(kept):
            entry[1] = {key: value for key, value in current.items() if key not in rebound}  # a submodule imported since stays

    def put_back_table(k: int, replaced: list[str]) -> None:
        table, kept = dict_tables[k]
        if len_(table) == len_(kept) and not any_(map_(is_not, map_(table.get, kept), kept.values())):
            return
        replaced.append("the contents of a table of the grader's")
        dict_clear(table)
        dict_update(table, kept)

    def put_back_others(replaced: list[str]) -> None:
        for table, kept in list_tables:
            if len_(table) != len_(kept) or any_(map_(is_not, table, kept)):
                replaced.append("the contents of a table of the grader's")
                list_setitem(table, slice(None), kept)
        for cell, value, owner in zip_(cells, cell_values, cell_owners):
            try:
                same = cell.cell_contents is value
            except value_error:  # emptied
                same = False
            if not same:
                replaced.append(f"the state of {owner} (closure cells)")
                cell.cell_contents = value

    def others_unchanged() -> bool:
        if list_(map_(len_, list_objects)) != kept_lengths:
            return False
        try:
            return all_(map_(operator_is, chain(from_iterable(list_objects), map_(contents, cells)), kept_others))
        except value_error:  # a closure cell emptied
            return False

    def restore() -> list[str]:
        replaced: list[str] = []
        if everything is not None or read_first_tags() != kept_first[0]:
            for namespace, kept, name in first:
                replaced += [f"{name}.{key}" for key, value in kept.items() if namespace.get(key, missing) is not value]
                dict_update(namespace, kept)
            kept_first[0] = read_first_tags()
        if code_writes is None or code_writes[0]:
            if code_writes is not None:
                code_writes[0] = False
            for fn, kept_code in zip_(functions, codes):
                if any_(map_(is_not, get_code(fn), kept_code)):  # by identity: no __eq__ of a notebook's defaults runs
                    replaced.append(f"the code of {fn.__module__}.{fn.__qualname__}")
                    fn.__code__, fn.__defaults__, fn.__kwdefaults__ = kept_code
        now = read_tags()
        written = everything if everything is not None else (
            [] if now == kept_versions[0] else list_(compress(count(), map_(ne, now, kept_versions[0]))))
        unchanged = others_unchanged()
        if not written and unchanged:
            return replaced
        for position in written:
            kind, k = targets[position]
            if kind == "namespace":
                put_back_namespace(k, replaced)
            else:
                put_back_table(k, replaced)
        if not unchanged:
            put_back_others(replaced)
        kept_versions[0] = read_tags()
        return replaced

    return restore


class _DictVersions:
    """CPython's own per-dict version tag (``ma_version_tag``, PEP 509: every insert, replace, delete or clear gives
    the dict a new, never reused number), so that finding which of ~100 guarded dicts were written costs ~100
    integer reads instead of a pass over their ~12,000 names and values.

    The tag is not exposed to Python; it is read in place through ctypes, at an offset checked first (a dict
    written must change its number). Where the check fails (another Python), ``tags`` is None and the guard
    compares everything each time. A notebook that writes the tags back itself must use ctypes, which the audit
    hook flags."""

    OFFSET = 3 * 8  # PyDictObject in CPython 3.11: ob_refcnt, ob_type, ma_used, then ma_version_tag

    @classmethod
    def tags(cls, dicts: list[dict[Any, Any]]) -> list[Any] | None:
        """A c_uint64 over each dict's tag (the dicts must stay alive as long as these), or None."""
        return [cls._tag(d) for d in dicts] if cls.works() else None

    @classmethod
    def reader(cls, dicts: list[dict[Any, Any]]) -> Callable[[], tuple[int, ...]] | None:
        """A function returning every dict's tag, in order (the dicts must stay alive as long as it), or None.

        One C call: an ``itemgetter`` over a memoryview of the memory from the lowest tag to the highest, seen as
        unsigned 64-bit words (nothing is copied or touched but the tags). Reading ~500 tags through c_uint64's
        ``value`` getter one by one took ~110 us, two thirds of a restore that found nothing changed; a restore runs
        after every return from student code during an observation (~2,000 times a student)."""
        if not dicts or not cls.works():
            return None
        import ctypes
        import functools

        addresses = [id(d) + cls.OFFSET for d in dicts]
        low = min(addresses)
        words = (ctypes.c_uint64 * ((max(addresses) - low) // 8 + 1)).from_address(low)
        memory = memoryview(words).cast("B").cast("Q")  # ("<Q", ctypes' format, cannot be indexed)
        offsets = [(address - low) // 8 for address in addresses]
        if len(offsets) == 1:  # itemgetter of one index returns the item, not a tuple
            offsets.append(offsets[0])
            pair = operator.itemgetter(*offsets)
            return lambda: pair(memory)[:1]
        return functools.partial(operator.itemgetter(*offsets), memory)

    @classmethod
    def _tag(cls, d: dict[Any, Any]) -> Any:
        import ctypes
        return ctypes.c_uint64.from_address(id(d) + cls.OFFSET)

    @classmethod
    def works(cls) -> bool:
        if sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11):
            return False
        probe: dict[str, int] = {"a": 1}
        tag = cls._tag(probe)
        seen = [tag.value]
        probe["a"] = 2
        seen.append(tag.value)
        probe["b"] = 3
        seen.append(tag.value)
        del probe["a"]
        seen.append(tag.value)
        return len(set(seen)) == len(seen) and seen == sorted(seen)


def _real_dicts(mapping: Any) -> list[dict[Any, Any]]:
    """The dict behind a module's namespace (itself) or a class's (behind its mappingproxy)."""
    if type(mapping) is dict:
        return [mapping]
    import gc
    return [d for d in gc.get_referents(mapping) if type(d) is dict]


def resolve(entry: str, namespace: dict[str, Any]) -> Any:
    """`Square.apply` -> the object, by names and attributes only (test cells are parsed, not run)."""
    head, *rest = entry.split(".")
    if head not in namespace:
        raise NameError(f"name '{head}' is not defined: run the cell that defines it (did you rename or delete it?)")
    value = namespace[head]
    for attr in rest:
        value = getattr(value, attr)
    return value


def observe_call(call: dict[str, Any], namespace: dict[str, Any], after: Callable[[], Any] | None = None) -> list[dict[str, Any]]:
    fn = resolve(call["entry"], namespace)
    if after is not None:
        fn = _guarded(fn, [after])
    kwargs = dict(call["kwargs"])
    if registry.takes_exercise(call["module"]):
        ex = get(kwargs.pop("exercise"))
        draw = call.get("draw")  # the run's drawn probe (grader.spec.exercises.Exercise.probes)
        probes = ex.probes([tuple(s) for s in kwargs.get("shapes") or ex.default_shapes], int(kwargs.get("seed", 0)),
                           draw=draw if type(draw) is int else None)
        return observe.observe(call["check"], ex, fn, probes)
    return observe_functions.observe(call["check"], fn, namespace=namespace, **kwargs)


def _guarded(fn: Any, current: list[Any]) -> Any:
    """``fn`` that runs ``current[0]`` (the restore, or None) after it returns. ``current[0]`` is read before
    ``fn`` runs: the student's code inside cannot switch the guard off for that call."""
    def guarded(*args: Any, **kwargs: Any) -> Any:
        after = current[0]
        try:
            return fn(*args, **kwargs)
        finally:
            if after is not None:
                after()

    guarded.__name__ = getattr(fn, "__name__", "your function")
    guarded.__doc__ = getattr(fn, "__doc__", None)
    guarded.__wrapped__ = fn  # type: ignore[attr-defined]
    return guarded


def _install_function_guards(current: list[Any]) -> list[Any]:
    """Wrap torch's entry points into a custom Function's code (apply → forward, the engine → backward, forward
    mode → jvp) so that, during an observation, every return from student code runs ``current[0]`` (the
    restore, which switches the guard back on for the next call). Returns the wrappers (guarded themselves)."""
    Function, Backward = autograd_function.Function, autograd_function.BackwardCFunction
    forward = _guarded(Function.__dict__["apply"].__func__, current)
    backward = _guarded(Backward.__dict__["apply"], current)
    jvp = _guarded(Backward.__dict__["apply_jvp"], current)
    Function.apply = classmethod(forward)  # type: ignore[method-assign,assignment]
    Backward.apply = backward  # type: ignore[method-assign]
    Backward.apply_jvp = jvp  # type: ignore[method-assign]
    return [forward, backward, jvp]


_PREPARED: list[Any] = []  # (current, guard, code_writes) made by prepare_guard in the worker, taken by run_cells


def prepare_guard() -> None:
    """In the worker, once, before it forks a child per notebook: torch's entry points wrapped and the Guard's
    snapshot taken (its reach walk and ~500 dicts copied: ~55 ms of CPU every child paid again). Taken, like a
    child's own, when no notebook code has run in this process: the worker never runs any. ``run_cells`` takes it
    out of this module before any notebook code runs; what it adds then (its reporter's closures) is guarded too."""
    current: list[Any] = [None]
    wrappers = _install_function_guards(current)
    code_writes = [True]
    _PREPARED[:] = [(current, Guard(extra_functions=wrappers, code_writes=code_writes), code_writes)]


def _take_guard() -> tuple[list[Any], Guard, list[bool]]:
    """The worker's prepared guard (gone from this module once taken), or one made now (no worker: tests, unsandboxed)."""
    if _PREPARED:
        return _PREPARED.pop()
    current: list[Any] = [None]
    code_writes = [True]
    return current, Guard(extra_functions=_install_function_guards(current), code_writes=code_writes), code_writes


def _cell_error(error: BaseException, source: str) -> dict[str, Any]:
    """What a code cell raised, with the line of the cell where it happened (if it happened in the cell)."""
    info: dict[str, Any] = {"error": f"{type(error).__name__}: {error}"}
    line = None
    if isinstance(error, SyntaxError) and error.lineno:
        line = error.lineno
    elif isinstance(getattr(error, "lineno", None), int):  # refused by the policy when compiled
        line = error.lineno  # type: ignore[attr-defined]
    else:
        for frame, lineno in traceback.walk_tb(error.__traceback__):
            if frame.f_code.co_filename.startswith("<ipython-input-") or frame.f_code.co_filename.startswith("/tmp/ipykernel"):
                line = lineno  # the deepest frame that is the cell itself
    lines = source.split("\n")
    if line is not None:  # IPython drops a cell's leading blank lines before compiling it
        line += next((k for k, text in enumerate(lines) if text.strip()), 0)
    if line is not None and 1 <= line <= len(lines):
        info["line"], info["code"] = line, lines[line - 1].strip()[:200]
    return info


def run_cells(plan: list[dict[str, Any]], address: str, key: bytes | None = None) -> None:
    """Execute the plan, reporting one message per event on one connection to the socket at ``address``, each
    line signed with ``key`` (``grader.boundary.channel``) when one is given."""
    # Everything this loop calls is held in locals (of this frame and of closures only an audited gc walk or
    # frame access could reach): replacing grader.sandboxed.child.* or module globals from a cell changes nothing here.
    dumps, encode, as_text = json.dumps, wire.encode, repr
    suspicious, length, os_error, any_error = suspicion(), len, OSError, Exception  # builtins a cell may rebind
    reporting = [False]
    position = [None]  # the plan item running now, for flags
    flagged: set[tuple[Any, str]] = set()
    # The channel (grader.boundary.channel says what holds): ONE connection, opened now, before any student code runs,
    # close-on-exec (a program the notebook execs, which keeps this pid, starts without it; the worker has stopped
    # listening by then, so it cannot connect again). A process the notebook forks keeps a copy: closed at once
    # for forks made through Python (os.fork, multiprocessing), and whatever any other writes on it is dropped and
    # flagged by the worker, which asks the kernel who wrote each piece. Lines are signed (HMAC-SHA256 computed with
    # hashlib's C objects, keyed now) so that the notebook's own code writing on the descriptor is not believed.
    channel = _socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # C type; non-inheritable (SOCK_CLOEXEC)
    channel.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)  # the kernel names the writer of every piece,
    channel.connect(address)  # even of what is sent before the worker accepts the connection
    send, channel_fd, fstat, get_pid, exit_now = channel.sendall, channel.fileno(), os.fstat, os.getpid, os._exit
    own_pid, own_socket = get_pid(), (fstat(channel_fd).st_dev, fstat(channel_fd).st_ino)
    detach, close_fd, receive, loads = channel.detach, os.close, channel.recv, json.loads
    unread = [b""]  # bytes received after the last line

    def next_check() -> list[Any]:
        """The calls of the test item just started, as the trusted side sends them (grader.boundary.channel): this
        process never holds a check before its turn."""
        data = unread[0]
        while b"\n" not in data:
            more = receive(65536)
            if not more:
                exit_now(CHANNEL_BROKEN)  # the worker is gone: nothing can be observed or reported
            data += more
        line, _, unread[0] = data.partition(b"\n")
        return loads(line)["calls"]

    def forget_channel() -> None:  # in a process forked through Python: it cannot speak for the observer
        try:
            close_fd(detach())
        except any_error:
            pass

    os.register_at_fork(after_in_child=forget_channel)
    inner = outer = None
    if key is not None:
        import hashlib

        block = key.ljust(64, b"\0")
        inner = hashlib.sha256(bytes(b ^ 0x36 for b in block))  # HMAC (RFC 2104) on a key of 64 bytes at most
        outer = hashlib.sha256(bytes(b ^ 0x5C for b in block))
        del key, block

    def signed(payload: bytes) -> bytes:
        if inner is None:
            return payload + b"\n"
        digest = inner.copy()
        digest.update(payload)
        mac = outer.copy()
        mac.update(digest.digest())
        return mac.hexdigest()[:MAC_HEX].encode() + b" " + payload + b"\n"

    def report(entry: dict[str, Any]) -> None:
        # Observations (tensors) go through wire.encode, right after the originals were put back; every other
        # report is plain data, encoded by json's C encoder alone: a notebook's patched builtins cannot reach it.
        if get_pid() != own_pid:
            return  # a process the notebook forked: it has no channel, and cannot speak for the observer
        reporting[0] = True  # only our own calls below are not flagged
        try:
            plain = entry.get("event") != "observed"
            data = signed((dumps(entry, default=as_text) if plain else dumps(encode(entry))).encode())
            stat = fstat(channel_fd)
            if (stat.st_dev, stat.st_ino) != own_socket:  # closed and reopened, or another file put in its place
                raise os_error("the channel's descriptor no longer holds the grader's connection")
            send(data)
        except any_error:
            # A report that cannot be sent (no descriptors left, the connection closed or replaced, the worker gone)
            # ends the notebook: never dropped, or a flag would go unsaid. The trusted side says the notebook broke
            # the grader's channel, and every check not observed by then scores 0.
            exit_now(CHANNEL_BROKEN)
        finally:
            reporting[0] = False

    def flag(what: str) -> None:
        if (position[0], what) not in flagged and length(flagged) < 50:
            flagged.add((position[0], what))
            report({"event": "flag", "index": position[0], "what": what})

    busy = [False]

    # the function guards and the Guard's snapshot: the worker's (prepare_guard), else made here
    current, guard, code_writes = _take_guard()  # code_writes: set on every write of a function's code or defaults
    # Event names judged harmless by name alone (builtins.id, compile, exec ...: ~350,000 events a notebook, most of
    # them id() in copies and in the policy's guards): returned from at once. Only this closure holds the set.
    quiet: set[str] = set()
    by_arguments, quiet_kept, remember = JUDGED_BY_ARGUMENTS, QUIET_EVENTS_KEPT, quiet.add

    def audit(event: str, args: tuple[Any, ...]) -> None:
        if event in quiet:
            return
        if event == "object.__setattr__" or event == "object.__delattr__":  # (deleting __defaults__ too)
            code_writes[0] = True
        if busy[0] or reporting[0]:
            return
        busy[0] = True
        try:
            what = suspicious(event, args)
            if what:
                flag(what)
            elif event not in by_arguments and length(quiet) < quiet_kept:
                remember(event)
        except any_error:
            pass  # the hook must never break the notebook
        finally:
            busy[0] = False

    guard.add_functions([report, signed, forget_channel, flag, audit, suspicious])
    restore_all, observe_one, set_trace, set_profile = guard.restorer, observe_call, sys.settrace, sys.setprofile
    restored: list[str] = []

    def after_student() -> None:
        current[0] = after_student  # a notebook that switched the guard off gets it back for the next call
        restored.extend(restore_all())

    sys.addaudithook(audit)
    shell = make_shell()
    outputs = Outputs(shell)
    # Cells the student wrote or changed compile under the course's policy (grader.sandboxed.policy): they cannot name frames,
    # gc, sys, os, ctypes, the grader's modules or underscore attributes, so nothing above is theirs to reach.
    policy.Runtime(shell.user_ns).install()
    graded_policy, transformers = policy.PolicyTransformer(), shell.ast_transformers
    for item in plan:
        if item["kind"] == "language":  # the notebook's (grader.judge.runner): its self-checks print in it
            messages.choose(item.get("language"))
            continue
        position[0] = item["index"]
        report({"event": "start", "index": item["index"]})
        if item["kind"] == "code":
            outputs.begin()
            saved_streams = sys.stdout, sys.stderr
            sys.stdout, sys.stderr = outputs.stdout, outputs.stderr
            restricted = item.get("restricted", True)  # only the instructor's own cells run as they are
            transformers[:] = [graded_policy] if restricted else []
            try:
                result = shell.run_cell(item["source"], store_history=False)
            finally:
                sys.stdout, sys.stderr = saved_streams
                transformers[:] = []
            error = result.error_before_exec or result.error_in_exec
            report({"event": "done", "index": item["index"], "outputs": outputs.cell,
                    **(_cell_error(error, item["source"]) if error else {"error": ""})})
            continue
        reporting[0] = True  # our own calls: not flagged
        set_trace(None)  # no tracing or profiling hook of the notebook may watch or rewrite observing
        set_profile(None)
        reporting[0] = False
        threading.settrace(None)  # type: ignore[arg-type]
        threading.setprofile(None)  # type: ignore[arg-type]
        restored.clear()
        restored.extend(restore_all())
        reporting[0] = True
        try:
            checks = item["calls"] if "calls" in item else next_check()
        except any_error:
            exit_now(CHANNEL_BROKEN)
        finally:
            reporting[0] = False
        current[0] = after_student
        calls = []
        for call in checks:
            try:
                calls.append({"observations": observe_one(call, shell.user_ns, after_student)})
            except Exception as exc:  # the function under test is missing or its lookup failed
                calls.append({"error": f"{type(exc).__name__}: {exc}"})
            restored.extend(restore_all())
        current[0] = None
        report({"event": "observed", "index": item["index"], "calls": calls, "restored": sorted(set(restored))})


def main(plan_path: str, address: str) -> None:
    """Unsandboxed grading (trusted code only): ``python -m grader.sandboxed.child PLAN.json ADDRESS``."""
    with open(plan_path, encoding="utf-8") as f:
        plan = json.load(f)
    run_cells(plan, "\0" + address[1:] if address.startswith("@") else address)  # "@name": an abstract socket


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
