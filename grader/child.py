"""The sandboxed side of trusted grading: run a notebook's cells, and observe where test cells stood.

``run(plan, address)`` executes the plan in this process (forked by ``grader.worker`` for each notebook):
PLAN holds the notebook's code cells in order; where an instructor's test cell stood it holds the check
calls parsed from it (``grader.testcells``), never its code. For each one it evaluates the function under
test in the notebook's namespace, records observations (``grader.observe``) and reports one JSON message.

How the observations stay the observer's, with untrusted code in the same process:
- **The channel is not a descriptor of this process.** Each message is sent over a fresh connection to the
  worker's listening socket, opened and closed by the reporter while no student code runs. The worker
  accepts a message only from this process's pid (the kernel says who connected), and the sandbox's seccomp
  filter refuses threads, so nothing runs beside the reporter while it sends. A student cell that opens a
  socket, or a process it forks that tries, is flagged (below) or refused by the worker.
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
import io
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

from . import basics, diagnosis, exercises, observe, secondorder, wire
from .exercises import get

GRADER_DIR = os.path.dirname(os.path.abspath(__file__))
TRUSTED_CODE = tuple({os.path.abspath(p) + os.sep for p in (sys.prefix, sys.base_prefix, os.path.dirname(os.__file__))})
MISSING = object()

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
    torch.autograd.gradcheck, torch.nn.functional, json, os, socket, wire, observe, basics, diagnosis, exercises,
    secondorder, autograd_function.Function, autograd_function.BackwardCFunction, torch.autograd.graph.saved_tensors_hooks,
]
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
ADDITIONS_REMOVED = (builtins, wire, observe, basics, diagnosis, exercises, secondorder, torch._VF,
                     sys.modules[__name__])
BUILTIN_NAMES = frozenset(vars(builtins))

# Audit events no honest answer raises (measured on the course's solutions, the catalogue and alternatives).
ALWAYS_FLAGGED = {
    "gc.get_referrers": "gc.get_referrers (reaching the grader's objects)",
    "gc.get_referents": "gc.get_referents (reaching the grader's objects)",
    "gc.get_objects": "gc.get_objects (reaching the grader's objects)",
    "sys._current_frames": "sys._current_frames (reading the grader's frames)",
    "_thread.start_new_thread": "starting a thread",
    "sys.addaudithook": "adding an audit hook",
    "sys.settrace": "a trace hook (sys.settrace)",
    "sys.setprofile": "a profile hook (sys.setprofile)",
}
FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})
PROC_DESCRIPTORS = ("/proc/", "/dev/fd")


def _grader_functions() -> list[Any]:
    found = []
    for module in (observe, basics, wire, diagnosis, exercises, secondorder, sys.modules[__name__]):
        for value in vars(module).values():
            if getattr(value, "__module__", None) == module.__name__ and hasattr(value, "__code__"):
                found.append(value)
    return found


def _grader_tables() -> list[Any]:
    """The grader's tables (its modules' dicts and lists: registries of checks, observers, exercises, patterns) and
    the frozen dataclasses they hold (object.__setattr__ changes those all the same): containers whose contents a
    notebook could change in place, where the guard's identity check of module attributes sees nothing."""
    tables: list[Any] = []
    for module in (observe, basics, wire, diagnosis, exercises, secondorder):
        for value in list(vars(module).values()):
            if type(value) in (dict, list):
                tables.append(value)
                items = value.values() if type(value) is dict else value
                tables += [vars(item) for item in items if dataclasses.is_dataclass(item) and not isinstance(item, type)]
    return tables


def _cell_filled(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


class Guard:
    """The originals of everything observing relies on; ``restore()`` puts them back and says what changed.

    ``restore`` runs after every return from student code during an observation (a second-order check of a
    notebook calls it thousands of times), so its common case, nothing changed, is one identity pass in C over
    every guarded name, table entry, function and closure cell at once."""

    def __init__(self, extra_functions: list[Any] = (), code_writes: list[bool] | None = None) -> None:  # type: ignore[assignment]
        """``code_writes``: a one-item list the audit hook sets to True when any function's ``__code__``,
        ``__defaults__`` or ``__kwdefaults__`` is written (those writes raise audit events, and reading ``__code__``
        raises one too, so reading 180 functions' code after every return from student code would cost ~0.2 ms
        of hook calls). Without it, every restore compares them."""
        self.code_writes = code_writes
        self.namespaces = []
        owners = [*GUARDED_NAMESPACES, *functorch_namespaces(), sys.modules[__name__]]
        for owner in [owner for k, owner in enumerate(owners) if not any(o is owner for o in owners[:k])]:
            kept = {k: v for k, v in vars(owner).items() if (owner, k) not in REBOUND_BY_TORCH}
            strict = isinstance(owner, type) or owner in ADDITIONS_REMOVED  # additions removed too
            self.namespaces.append([owner, kept, strict])
        functions = [*_grader_functions(), *extra_functions]
        self.functions = functions
        self.codes = [(fn.__code__, fn.__defaults__, fn.__kwdefaults__) for fn in functions]
        self.cells = [c for fn in functions for c in (fn.__closure__ or ()) if _cell_filled(c)]
        self.cell_owners = [f"{fn.__module__}.{fn.__qualname__}" for fn in functions
                            for c in (fn.__closure__ or ()) if _cell_filled(c)]
        self.cell_values = [c.cell_contents for c in self.cells]
        self._code = operator.attrgetter("__code__", "__defaults__", "__kwdefaults__")
        self._contents = operator.attrgetter("cell_contents")
        self._is_not = operator.is_not
        # What restore() itself runs on: the builtins (any, map, len ...) and this module's globals. Put back
        # first, with dict.update (a method of the real dicts, held here): nothing a notebook patched runs.
        here = sys.modules[__name__]
        self._first = [(builtins.__dict__, dict(builtins.__dict__), "builtins"),
                       (here.__dict__, dict(here.__dict__), here.__name__)]
        self._missing = MISSING
        self.tables = [(table, dict(table) if type(table) is dict else list(table)) for table in _grader_tables()]
        # The live views the fast path reads (vars() of a class makes a new proxy each call; a kept one stays live).
        self._mappings = [vars(owner) for owner, _, _ in self.namespaces] + [t for t, _ in self.tables if type(t) is dict]
        self._lists = [t for t, _ in self.tables if type(t) is not dict]
        self._versions = _DictVersions([d for mapping in self._mappings for d in _real_dicts(mapping)])
        self._first_versions = _DictVersions([namespace for namespace, _, _ in self._first])
        self._fast = self._snapshot()

    def _snapshot(self) -> "_Snapshot":
        self._versions.keep()
        self._first_versions.keep()
        return _Snapshot(self._mappings, self._lists, self.cells, self._contents)

    def restore(self) -> list[str]:
        replaced: list[str] = []
        missing = self._missing
        if not self._first_versions.unchanged():
            for namespace, kept, name in self._first:
                replaced += [f"{name}.{k}" for k, v in kept.items() if namespace.get(k, missing) is not v]
                namespace.update(kept)
            self._first_versions.keep()
        code_writes = self.code_writes
        if code_writes is None or code_writes[0]:
            if code_writes is not None:
                code_writes[0] = False
            is_not = self._is_not
            for fn, kept_code in zip(self.functions, self.codes):
                if any(map(is_not, self._code(fn), kept_code)):  # by identity: no __eq__ of a notebook's defaults runs
                    replaced.append(f"the code of {fn.__module__}.{fn.__qualname__}")
                    fn.__code__, fn.__defaults__, fn.__kwdefaults__ = kept_code
        dicts_unchanged = self._versions.unchanged()
        if self._fast.unchanged(dicts_unchanged=dicts_unchanged):
            if not dicts_unchanged:  # written, but to the same objects (a name set back, torch's own state)
                self._versions.keep()
            return replaced
        is_not = self._is_not
        for entry in self.namespaces:
            owner, kept, strict = entry
            current = vars(owner)
            name = getattr(owner, "__name__", str(owner))
            for key in [k for k in current if k not in kept]:
                if strict or key in BUILTIN_NAMES:
                    replaced.append(f"{name}.{key} (added)")
                    _set(owner, key, MISSING)
            for key, value in kept.items():
                if current.get(key, MISSING) is not value:
                    replaced.append(f"{name}.{key}")
                    _set(owner, key, value)
            if len(vars(owner)) != len(kept):  # what stays added (a submodule imported since) is kept from now on
                entry[1] = {k: v for k, v in vars(owner).items() if (owner, k) not in REBOUND_BY_TORCH}
        for table, kept_table in self.tables:
            if type(table) is dict:
                changed = len(table) != len(kept_table) or any(map(is_not, map(table.get, kept_table), kept_table.values()))
            else:
                changed = len(table) != len(kept_table) or any(map(is_not, table, kept_table))
            if changed:
                replaced.append("the contents of a table of the grader's")
                if type(table) is dict:
                    dict.clear(table)
                    dict.update(table, kept_table)
                else:
                    list.__setitem__(table, slice(None), kept_table)
        for cell, value, owner in zip(self.cells, self.cell_values, self.cell_owners):
            try:
                same = cell.cell_contents is value
            except ValueError:  # emptied
                same = False
            if not same:
                replaced.append(f"the state of {owner} (closure cells)")
                cell.cell_contents = value
        # As kept now, but for torch's own rebinding (REBOUND_BY_TORCH) and submodules imported since: the new normal.
        self._fast = self._snapshot()
        return replaced


class _Snapshot:
    """Every guarded mapping's keys and values, every table list's items and the functions' closure cells,
    flattened in order, to compare by identity in one pass. ``is`` only: no key lookups, no ``__eq__`` of anything
    a notebook made, and no ``id()`` or ``__code__`` (they raise audit events, each a call of the hook)."""

    def __init__(self, mappings: list[Any], lists: list[Any], cells: list[Any], contents: Callable[[Any], Any]) -> None:
        self.sources = (mappings, lists, cells)
        self._chain, self._values, self._contents = itertools.chain, operator.methodcaller("values"), contents
        self._is, self._all, self._len, self._map, self._list = operator.is_, all, len, map, list
        self.lengths = self._lengths()
        self.objects = tuple(self._objects())
        self.others = tuple(self._others())

    def _lengths(self) -> list[int]:
        mappings, lists, _ = self.sources
        return self._list(self._map(self._len, mappings)) + self._list(self._map(self._len, lists))

    def _objects(self) -> Any:
        mappings, lists, cells = self.sources
        flat, map_ = self._chain.from_iterable, self._map
        return self._chain(flat(mappings), flat(map_(self._values, mappings)), flat(lists), map_(self._contents, cells))

    def unchanged(self, dicts_unchanged: bool = False) -> bool:
        """Whether everything is as snapshotted; ``dicts_unchanged`` (no guarded dict was written since, by their
        versions) leaves only the lists and closure cells to compare."""
        if self._lengths() != self.lengths:  # lists of ints
            return False
        try:
            if dicts_unchanged:
                return self._all(self._map(self._is, self._others(), self.others))
            return self._all(self._map(self._is, self._objects(), self.objects))
        except ValueError:  # a closure cell emptied
            return False

    def _others(self) -> Any:
        _, lists, cells = self.sources
        return self._chain(self._chain.from_iterable(lists), self._map(self._contents, cells))


class _DictVersions:
    """Whether any of these dicts was written since ``keep()``, read from CPython's own per-dict version tag
    (``ma_version_tag``, PEP 509: every insert, replace, delete or clear gives the dict a new, never reused
    number), so that checking ~5,000 guarded names costs ~100 integer reads instead of a pass over all of them.

    The tag is not exposed to Python; it is read in place through ctypes, at an offset checked when the Guard is
    built (a dict written must change its number). Where the check fails (another Python), ``unchanged()`` is
    always False and the full identity pass decides. A notebook that writes the tags back itself must use
    ctypes, which the audit hook flags."""

    OFFSET = 3 * 8  # PyDictObject in CPython 3.11: ob_refcnt, ob_type, ma_used, then ma_version_tag

    def __init__(self, dicts: list[dict[Any, Any]]) -> None:
        self.dicts = dicts  # kept alive: the addresses below stay theirs
        self.tags = [self._tag(d) for d in dicts] if self.works() else None
        self._value, self._list, self._map = operator.attrgetter("value"), list, map
        self.kept: list[int] = []

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

    def keep(self) -> None:
        if self.tags is not None:
            self.kept = self._list(self._map(self._value, self.tags))

    def unchanged(self) -> bool:
        return self.tags is not None and self._list(self._map(self._value, self.tags)) == self.kept  # lists of ints


def _real_dicts(mapping: Any) -> list[dict[Any, Any]]:
    """The dict behind a module's namespace (itself) or a class's (behind its mappingproxy)."""
    if type(mapping) is dict:
        return [mapping]
    import gc
    return [d for d in gc.get_referents(mapping) if type(d) is dict]


def _set(owner: Any, key: str, value: Any) -> None:
    if isinstance(owner, type):
        if value is MISSING:
            delattr(owner, key)
        else:
            setattr(owner, key, value)
    elif value is MISSING:
        del vars(owner)[key]
    else:
        vars(owner)[key] = value


CELL_OUTPUT_BYTES = 256_000  # what one cell's outputs may take (text and images); the rest is cut, with a note
NOTEBOOK_OUTPUT_BYTES = 2_000_000  # all cells of a notebook
KEPT_MIMETYPES = ("text/plain", "image/png", "image/jpeg", "image/svg+xml", "text/latex")  # never student HTML


class Outputs:
    """What the student's cells show, as nbformat outputs (stdout, stderr, rich display data, errors with
    their traceback), in order and capped, so that autograded notebooks carry them as stock nbgrader's do.
    Installed on the shell once: its streams, display publisher, display hook and traceback printer."""

    def __init__(self, shell: Any) -> None:
        self.cell: list[dict[str, Any]] = []
        self.size = 0
        self.total = 0
        self.cut = False
        shell.display_pub.publish = self._publish
        shell.displayhook.write_output_prompt = lambda: None
        shell.displayhook.write_format_data = self._result
        shell._showtraceback = self._error
        self.stdout, self.stderr = _Stream(self, "stdout"), _Stream(self, "stderr")

    def begin(self) -> None:
        self.cell, self.size, self.cut = [], 0, False

    def _room(self, size: int) -> bool:
        if self.size + size > CELL_OUTPUT_BYTES or self.total + size > NOTEBOOK_OUTPUT_BYTES:
            if not self.cut:
                self.cut = True
                self.cell.append({"output_type": "stream", "name": "stderr",
                                  "text": "[more output not kept: the grader keeps at most "
                                          f"{CELL_OUTPUT_BYTES // 1000} kB per cell and "
                                          f"{NOTEBOOK_OUTPUT_BYTES // 1000_000} MB per notebook]\n"})
            return False
        self.size += size
        self.total += size
        return True

    def stream(self, name: str, text: str) -> None:
        if not text or not self._room(len(text)):
            return
        last = self.cell[-1] if self.cell else None
        if last and last["output_type"] == "stream" and last["name"] == name:
            last["text"] += text
        else:
            self.cell.append({"output_type": "stream", "name": name, "text": text})

    def _data(self, data: dict[str, Any]) -> dict[str, str] | None:
        kept = {k: v for k, v in data.items() if k in KEPT_MIMETYPES and isinstance(v, str)}
        if not kept or not self._room(sum(len(v) for v in kept.values())):
            return None
        return kept

    def _publish(self, data: dict[str, Any], metadata: Any = None, *args: Any, **kwargs: Any) -> None:
        kept = self._data(dict(data or {}))
        if kept:
            self.cell.append({"output_type": "display_data", "data": kept, "metadata": {}})

    def _result(self, data: dict[str, Any], metadata: Any = None) -> None:
        kept = self._data(dict(data or {}))
        if kept:
            self.cell.append({"output_type": "execute_result", "data": kept, "metadata": {}, "execution_count": None})

    def _error(self, etype: Any, evalue: Any, stb: list[str]) -> None:
        lines = [str(line) for line in stb][-60:]  # the deepest frames
        if self._room(sum(len(line) for line in lines)):
            self.cell.append({"output_type": "error", "ename": getattr(etype, "__name__", str(etype)),
                              "evalue": str(evalue)[:2000], "traceback": lines})


class _Stream(io.TextIOBase):
    def __init__(self, sink: Outputs, name: str) -> None:
        self.sink, self.name = sink, name

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.sink.stream(self.name, str(text))
        return len(text)


TRACEBACK_MODE = "Plain"


def make_shell() -> Any:
    """The IPython shell cells run in (a worker makes it once, before forking); no history file.

    Errors in cells are shown as plain Python tracebacks (IPython's ``Plain`` mode: each frame's file, line and
    code line), not in the ``Context`` mode of a kernel: Context formats every frame's surrounding source with
    stack_data, which parses each file in the traceback (torch's gradcheck.py among them) and highlights it, about
    0.3 s per error in a freshly forked child, against 5-30 ms; and for a student, torch's internals printed
    with a dozen lines of context each bury their own line, which Plain shows first."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    if InteractiveShell.initialized():
        return InteractiveShell.instance()
    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.xmode = TRACEBACK_MODE
    return InteractiveShell.instance(config=config)


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
    if call["module"] == "checks":
        ex = get(kwargs.pop("exercise"))
        probes = ex.probes([tuple(s) for s in kwargs.get("shapes") or ex.default_shapes], int(kwargs.get("seed", 0)))
        return observe.observe(call["check"], ex, fn, probes)
    return basics.observe(call["check"], fn, namespace=namespace, **kwargs)


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


def _cell_error(error: BaseException, source: str) -> dict[str, Any]:
    """What a code cell raised, with the line of the cell where it happened (if it happened in the cell)."""
    info: dict[str, Any] = {"error": f"{type(error).__name__}: {error}"}
    line = None
    if isinstance(error, SyntaxError) and error.lineno:
        line = error.lineno
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


def run(plan: list[dict[str, Any]], address: str) -> None:
    """Execute the plan, reporting one message per event to the worker's socket at ``address``."""
    # Everything this loop calls is held in locals (of this frame and of closures only an audited gc walk or
    # frame access could reach): replacing grader.child.* or module globals from a cell changes nothing here.
    dumps, encode, as_text = json.dumps, wire.encode, repr
    new_socket, family, kind = _socket.socket, socket.AF_UNIX, socket.SOCK_STREAM  # C type: nothing to patch
    suspicious, length, os_error, any_error = _suspicion(), len, OSError, Exception  # builtins a cell may rebind
    reporting = [False]
    position = [None]  # the plan item running now, for flags
    flagged: set[tuple[Any, str]] = set()

    def report(entry: dict[str, Any]) -> None:
        # Observations (tensors) go through wire.encode, right after the originals were put back; every other
        # report is plain data, encoded by json's C encoder alone: a notebook's patched builtins cannot reach it.
        plain = entry.get("event") != "observed"
        data = ((dumps(entry, default=as_text) if plain else dumps(encode(entry))) + "\n").encode()
        reporting[0] = True  # only our own socket calls below are not flagged
        try:
            channel = new_socket(family, kind)
            try:
                channel.connect(address)
                channel.sendall(data)
            finally:
                channel.close()
        except os_error:
            pass  # the worker is gone: nothing left to tell
        finally:
            reporting[0] = False

    def flag(what: str) -> None:
        if (position[0], what) not in flagged and length(flagged) < 50:
            flagged.add((position[0], what))
            report({"event": "flag", "index": position[0], "what": what})

    busy = [False]

    code_writes = [True]  # set on every write of a function's code or defaults, whoever writes: see Guard

    def audit(event: str, args: tuple[Any, ...]) -> None:
        if event == "object.__setattr__" or event == "object.__delattr__":  # (deleting __defaults__ too)
            code_writes[0] = True
        if busy[0] or reporting[0]:
            return
        busy[0] = True
        try:
            what = suspicious(event, args)
            if what:
                flag(what)
        except any_error:
            pass  # the hook must never break the notebook
        finally:
            busy[0] = False

    current: list[Any] = [None]
    wrappers = _install_function_guards(current)
    guard = Guard(extra_functions=[*wrappers, report, flag, audit, suspicious], code_writes=code_writes)
    restore_all, observe_one, set_trace, set_profile = guard.restore, observe_call, sys.settrace, sys.setprofile
    restored: list[str] = []

    def after_student() -> None:
        current[0] = after_student  # a notebook that switched the guard off gets it back for the next call
        restored.extend(restore_all())

    sys.addaudithook(audit)
    shell = make_shell()
    outputs = Outputs(shell)
    for item in plan:
        position[0] = item["index"]
        report({"event": "start", "index": item["index"]})
        if item["kind"] == "code":
            outputs.begin()
            saved_streams = sys.stdout, sys.stderr
            sys.stdout, sys.stderr = outputs.stdout, outputs.stderr
            try:
                result = shell.run_cell(item["source"], store_history=False)
            finally:
                sys.stdout, sys.stderr = saved_streams
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
        current[0] = after_student
        calls = []
        for call in item["calls"]:
            try:
                calls.append({"observations": observe_one(call, shell.user_ns, after_student)})
            except Exception as exc:  # the function under test is missing or its lookup failed
                calls.append({"error": f"{type(exc).__name__}: {exc}"})
            restored.extend(restore_all())
        current[0] = None
        report({"event": "observed", "index": item["index"], "calls": calls, "restored": sorted(set(restored))})


def main(plan_path: str, address: str) -> None:
    """Unsandboxed grading (trusted code only): ``python -m grader.child PLAN.json ADDRESS``."""
    with open(plan_path, encoding="utf-8") as f:
        plan = json.load(f)
    run(plan, "\0" + address[1:] if address.startswith("@") else address)  # "@name": an abstract socket


def _suspicion() -> Callable[[str, tuple[Any, ...]], str]:
    """The audit hook's judgement of an event: what it attempted, if no honest answer does it; else "".

    What it reads is taken into its closure when the child starts, before any notebook code: its own copies of the
    tables, C functions and methods, strings. A cell that replaces this module's functions, empties its tables or
    rebinds builtins (len, isinstance) or os.path changes nothing it decides; the closure itself is reachable only
    through gc walks and frames, which it flags."""
    always = dict(ALWAYS_FLAGGED)
    flagged_event, frame_attributes = always.get, frozenset(FRAME_ATTRIBUTES)
    proc_descriptors, grader_dir, trusted_code = tuple(PROC_DESCRIPTORS), str(GRADER_DIR), tuple(TRUSTED_CODE)
    get_frame, is_instance, length, text_type, bytes_type = sys._getframe, isinstance, len, str, bytes
    decode = bytes.decode

    def student_file(filename: Any) -> bool:
        """Code that is neither the Python install, the venv, nor a frozen module: a notebook cell or a file it wrote
        (a path that is not absolute, or has "." or ".." parts, counts as the notebook's: no os.path here)."""
        if not is_instance(filename, text_type):
            return True
        if filename.startswith(grader_dir):
            return True
        if filename.startswith("<frozen"):
            return False
        return not (filename.startswith(trusted_code) and "/../" not in filename and "/./" not in filename)

    def suspicious(event: str, args: tuple[Any, ...]) -> str:
        what = flagged_event(event)
        if what:
            return what
        if event.startswith("ctypes."):
            return f"ctypes ({event}): raw memory access"
        if event.startswith("socket.") and event != "socket.getaddrinfo":
            return f"a socket ({event})"
        if event == "sys._getframe":
            code = args[0].f_code
            caller = get_frame(2).f_code
            if student_file(code.co_filename) or (caller.co_name == "walk_stack"
                                                  and caller.co_filename.endswith("traceback.py")):
                return "frame access (sys._getframe) to student or grader frames"
            return ""
        if event == "object.__getattr__" and length(args) > 1 and args[1] in frame_attributes:
            caller = get_frame(2).f_code.co_filename
            return f"frame access ({args[1]})" if student_file(caller) and not caller.startswith(grader_dir) else ""
        if event == "open" and args:
            path = args[0]
            # (an open by descriptor number is not flagged: this process holds no descriptor of the grader's,
            # and the standard library opens its own pipes that way, e.g. subprocess)
            text = path if is_instance(path, text_type) else (
                decode(path, "utf-8", "surrogateescape") if is_instance(path, bytes_type) else "")
            if text.startswith(proc_descriptors) and ("/fd" in text or "/mem" in text or "/map_files" in text
                                                      or "/task/" in text):
                return f"opening {text[:60]}"
        return ""

    return suspicious


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
