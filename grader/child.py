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
] + [(observe, name) for name in dir(observe) if callable(getattr(observe, name)) and not name.startswith("__")] \
  + [(basics, name) for name in ("observe",)] + [(wire, "encode")]


def snapshot() -> dict[tuple[int, str], tuple[Any, Any, Any]]:
    kept: dict[tuple[int, str], tuple[Any, Any, Any]] = {}
    for owner, name in GUARDED:
        if hasattr(owner, name):
            value = owner.__dict__.get(name, getattr(owner, name)) if isinstance(owner, type) else getattr(owner, name)
            kept[(id(owner), name)] = (owner, value, getattr(value, "__code__", None))
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
        if code is not None and getattr(value, "__code__", code) is not code:
            replaced.append(f"the code of {getattr(owner, '__name__', owner)}.{name}")
            value.__code__ = code
    return replaced


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
    kept = snapshot()
    write = os.write  # kept too: the results channel must not be patchable
    dumps, encode, fsync = json.dumps, wire.encode, os.fsync
    with open(plan_path, encoding="utf-8") as f:
        plan = json.load(f)
    fd = os.open(results_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def report(entry: dict[str, Any]) -> None:
        write(fd, (dumps(encode(entry)) + "\n").encode())
        fsync(fd)

    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    for item in plan:
        report({"event": "start", "index": item["index"]})
        if item["kind"] == "code":
            run = shell.run_cell(item["source"], store_history=False)
            error = run.error_before_exec or run.error_in_exec
            report({"event": "done", "index": item["index"], "error": f"{type(error).__name__}: {error}" if error else ""})
            continue
        replaced = restore(kept)
        calls = []
        for call in item["calls"]:
            try:
                calls.append({"observations": observe_call(call, shell.user_ns)})
            except Exception as exc:  # the function under test is missing or its lookup failed
                calls.append({"error": f"{type(exc).__name__}: {exc}"})
        report({"event": "observed", "index": item["index"], "calls": calls, "restored": replaced})
    os.close(fd)


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]
    main(sys.argv[1], sys.argv[2])
