"""The sandboxed side of trusted grading: run a notebook's cells, and observe where test cells stood.

    python -m grader.child PLAN.json RESULTS.jsonl

PLAN holds the notebook's code cells in order; where an instructor's test cell stood it holds the check
calls parsed from it (``grader.testcells``), never its code. For each one this process evaluates the
function under test in the notebook's namespace, records observations (``grader.observe``) and appends
one JSON line to RESULTS, flushed at once, so that a crash or a kill keeps what came before.

Before any student code runs, it keeps the originals of what observing relies on (torch's autograd entry
points, the grader's observers, builtins) and puts them back before each observation: a notebook that
patches them cannot change what is observed. This process decides nothing: the trusted side judges.
"""

from __future__ import annotations

import builtins
import json
import os
import sys
import threading
from typing import Any

import torch

from . import basics, observe, wire
from .exercises import get

# What observing relies on, kept before student code runs: (owner, attribute name).
GUARDED: list[tuple[Any, str]] = [
    (torch.autograd, "grad"), (torch.autograd, "backward"), (torch.autograd, "gradcheck"),
    (torch.autograd, "gradgradcheck"), (torch.autograd, "Function"), (torch.Tensor, "backward"),
    (torch, "autograd"), (torch, "Tensor"), (torch, "no_grad"), (torch, "enable_grad"),
    (torch.autograd.function.Function, "apply"), (json, "dumps"), (os, "fsync"),
] + [(module, name) for module in (observe, basics, wire) for name in dir(module)
     if callable(getattr(module, name)) and not name.startswith("__")]


def _function_state(value: Any) -> Any:
    """What a notebook could rewrite inside a function object: its code and its default arguments."""
    if not hasattr(value, "__code__"):
        return None
    return (value.__code__, value.__defaults__, value.__kwdefaults__)


def snapshot() -> dict[tuple[int, str], tuple[Any, Any, Any]]:
    kept: dict[tuple[int, str], tuple[Any, Any, Any]] = {}
    this = sys.modules[__name__]
    guarded = GUARDED + [(this, name) for name in dir(this) if callable(getattr(this, name)) and not name.startswith("__")]
    for owner, name in guarded:
        if hasattr(owner, name):
            value = owner.__dict__.get(name, getattr(owner, name)) if isinstance(owner, type) else getattr(owner, name)
            kept[(id(owner), name)] = (owner, value, _function_state(value))
    kept[(id(builtins), "*")] = (builtins, dict(vars(builtins)), None)
    return kept


def restore(kept: dict[tuple[int, str], tuple[Any, Any, Any]]) -> list[str]:
    """Put back everything the notebook replaced; return what it had replaced."""
    replaced = []
    for (_, name), (owner, value, code) in kept.items():
        if name == "*":
            current = vars(owner)
            changed = [k for k, v in value.items() if current.get(k) is not v]
            if changed:
                replaced.append("builtins." + ", builtins.".join(sorted(changed)[:5]))
                current.update(value)
            continue
        now = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
        if now is not value:
            replaced.append(f"{getattr(owner, '__name__', owner)}.{name}")
            setattr(owner, name, value)
        if code is not None and _function_state(value) != code:
            replaced.append(f"the code of {getattr(owner, '__name__', owner)}.{name}")
            value.__code__, value.__defaults__, value.__kwdefaults__ = code
    return replaced


def make_shell() -> Any:
    """The IPython shell cells run in (a worker makes it once, before forking); no history file."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    if InteractiveShell.initialized():
        return InteractiveShell.instance()
    config = Config()
    config.HistoryManager.enabled = False
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


def observe_call(call: dict[str, Any], namespace: dict[str, Any]) -> list[dict[str, Any]]:
    fn = resolve(call["entry"], namespace)
    kwargs = dict(call["kwargs"])
    if call["module"] == "checks":
        ex = get(kwargs.pop("exercise"))
        probes = ex.probes([tuple(s) for s in kwargs.get("shapes") or ex.default_shapes], int(kwargs.get("seed", 0)))
        return observe.observe(call["check"], ex, fn, probes)
    return basics.observe(call["check"], fn, **kwargs)


def main(plan_path: str, results_path: str) -> None:
    with open(plan_path, encoding="utf-8") as f:
        plan = json.load(f)
    fd = os.open(results_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    run(plan, fd)
    os.close(fd)


def run(plan: list[dict[str, Any]], fd: int) -> None:
    """Execute the plan, appending one JSON line per event to ``fd`` (flushed at once)."""
    # Everything this loop calls is held in locals from here on: replacing grader.child.* or the module's
    # globals from a notebook cell changes nothing below.
    kept, restore_all, observe_one = snapshot(), restore, observe_call
    write = os.write  # kept too: the results channel must not be patchable
    dumps, encode, fsync = json.dumps, wire.encode, os.fsync

    def report(entry: dict[str, Any]) -> None:
        write(fd, (dumps(encode(entry)) + "\n").encode())
        fsync(fd)

    shell = make_shell()
    for item in plan:
        report({"event": "start", "index": item["index"]})
        if item["kind"] == "code":
            run = shell.run_cell(item["source"], store_history=False)
            error = run.error_before_exec or run.error_in_exec
            report({"event": "done", "index": item["index"], "error": f"{type(error).__name__}: {error}" if error else ""})
            continue
        sys.settrace(None)  # no tracing or profiling hook of the notebook may watch or rewrite observing
        sys.setprofile(None)
        threading.settrace(None)  # type: ignore[arg-type]
        threading.setprofile(None)  # type: ignore[arg-type]
        replaced = restore_all(kept)
        calls = []
        for call in item["calls"]:
            try:
                calls.append({"observations": observe_one(call, shell.user_ns)})
            except Exception as exc:  # the function under test is missing or its lookup failed
                calls.append({"error": f"{type(exc).__name__}: {exc}"})
        report({"event": "observed", "index": item["index"], "calls": calls, "restored": replaced})


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]
    main(sys.argv[1], sys.argv[2])
