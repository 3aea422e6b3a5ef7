"""Notebooks run as the student's own kernel runs them: an ordinary IPython shell, no policy installed (the
self-checks of grader.checks and grader.basics check the cells that define what they test, as they do in JupyterLab),
NBGRADER_EXECUTION set as `nbgrader validate` sets it, every cell run even after one raised (as validate does).

    python tests/student_kernel.py < notebooks.json > verdicts.json

stdin: a JSON list of {"key": ..., "cells": [{"source": ..., "grade_id": ...}]}; stdout: {key: {grade_id: "passed" or
the error}} for the cells with a grade_id (the test cells). torch, IPython and the grader are imported once; the
notebooks made from one solutions notebook share a kernel up to their first differing cell, and each runs the rest in
a child forked from it (two at a time): the state each notebook's cells see is that of its own Restart & Run All.
torch's lazy imports (gradcheck's sympy, torch.func's torch._dynamo: 0.7 to 2 s of CPU the first time) are paid once,
before the first fork, as grader.sandboxed.worker.warm_up pays them for the grading workers; torch's random state is
put back after them."""

from __future__ import annotations

import json
import os
import sys
import time

os.environ["MPLBACKEND"] = "Agg"
os.environ["NBGRADER_EXECUTION"] = "validate"
os.environ.setdefault("OMP_NUM_THREADS", "1")

import IPython.core.interactiveshell  # noqa: E402
import matplotlib  # noqa: E402,F401
import torch  # noqa: E402
import torch.func  # noqa: E402,F401

from grader import basics, checks  # noqa: E402,F401

torch.set_num_threads(1)
PARALLEL = 2


def new_shell():
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    return IPython.core.interactiveshell.InteractiveShell.instance(config=config)


def run_cells(shell, cells: list[dict[str, str]]) -> dict[str, str]:
    verdicts = {}
    for cell in cells:
        result = shell.run_cell(cell["source"], store_history=True)
        if cell["grade_id"]:
            error = result.error_before_exec or result.error_in_exec
            verdicts[cell["grade_id"]] = "passed" if error is None else f"{type(error).__name__}: {str(error)[:400]}"
    return verdicts


def forked(work) -> tuple[int, int]:
    """Run ``work()`` (returning JSON-able data) in a forked child; (its pid, the pipe its result comes on)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: what the cells print goes nowhere
        os.close(read)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        try:
            data = json.dumps(work()).encode()
        except BaseException as error:  # noqa: BLE001
            data = json.dumps({"": f"the kernel failed: {type(error).__name__}: {error}"}).encode()
        with os.fdopen(write, "wb") as out:
            out.write(data)
        os._exit(0)
    os.close(write)
    return pid, read


def result_of(pid: int, read: int) -> dict:
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    return json.loads(data.decode() or "{}")


def common_prefix(group: list[list[dict[str, str]]]) -> int:
    n = 0
    while all(len(cells) > n + 1 for cells in group) and all(cells[n] == group[0][n] for cells in group):
        n += 1
    return n


def run_group(group: list[dict]) -> dict[str, dict[str, str]]:
    """Notebooks that begin with the same cells (the same solutions notebook up to its first changed cell): those
    cells run once in one kernel, each notebook's rest in a child forked from it (the kernel's state as it would be
    after running those cells itself), PARALLEL at a time."""
    prefix = common_prefix([notebook["cells"] for notebook in group])
    shell = new_shell()
    shared = run_cells(shell, group[0]["cells"][:prefix])
    verdicts: dict[str, dict[str, str]] = {}
    running: list[tuple[str, int, int, float]] = []

    def collect(key: str, pid: int, read: int, started: float) -> None:
        verdicts[key] = {**shared, **result_of(pid, read)}
        if os.environ.get("STUDENT_KERNEL_TIMES"):
            print(f"{time.monotonic() - started:6.2f} s {key}", file=sys.__stderr__)

    for notebook in group:
        if len(running) >= PARALLEL:
            collect(*running.pop(0))
        rest = notebook["cells"][prefix:]
        running.append((notebook["key"], *forked(lambda rest=rest: run_cells(shell, rest)), time.monotonic()))
    for job in running:
        collect(*job)
    return verdicts


def warm_up() -> None:
    """torch's lazy imports, once in this process instead of in every forked child: what the first gradcheck,
    gradgradcheck, torch.func transform and forward-mode call import. Nothing a notebook sees changes: no name is
    defined in any shell, and torch's global random state is put back (the notebooks draw the numbers they would
    draw in a fresh kernel)."""
    import importlib

    from torch.autograd import forward_ad

    state = torch.random.get_rng_state()
    try:
        x = torch.tensor([0.5, -1.25, 2.0], dtype=torch.float64, requires_grad=True)
        square = lambda t: t * t  # noqa: E731
        for fast in (False, True):
            torch.autograd.gradcheck(square, (x,), fast_mode=fast)
            torch.autograd.gradgradcheck(square, (x,), fast_mode=fast)
        importlib.import_module("torch._dynamo")
        f = lambda t: (torch.sin(t) * t).sum()  # noqa: E731
        torch.func.vmap(torch.func.grad(f))(x.detach().reshape(1, 3))
        torch.func.jvp(torch.func.grad(f), (x.detach(),), (x.detach(),))
        torch.func.hessian(f)(x.detach())
        with forward_ad.dual_level():
            forward_ad.unpack_dual(forward_ad.make_dual(x.detach(), x.detach()) * 2)
    finally:
        torch.random.set_rng_state(state)


def main() -> None:
    notebooks = json.load(sys.stdin)
    warm_up()
    groups: dict[str, list[dict]] = {}
    for notebook in notebooks:
        groups.setdefault(notebook["cells"][0]["source"] if notebook["cells"] else "", []).append(notebook)
    verdicts: dict[str, dict[str, str]] = {}
    for group in groups.values():  # each group in a child of its own: a fresh kernel for each solutions notebook
        verdicts.update(result_of(*forked(lambda group=group: run_group(group))))
    json.dump(verdicts, sys.stdout)


if __name__ == "__main__":
    main()
