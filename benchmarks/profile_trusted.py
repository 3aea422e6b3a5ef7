#!/usr/bin/env python
"""Where does trusted autograding spend its time? A breakdown to read next to benchmarks/autograde.py.

    .venv/bin/python benchmarks/profile_trusted.py                 # all parts, about a minute on 2 cores
    .venv/bin/python benchmarks/profile_trusted.py --course DIR    # also nbgrader's own overhead on a built course

1. pool:   start a grader.pool.Pool, then grade the three instructor notebooks one at a time with
           grader.runner.grade_cells, splitting each into pool.run (sandbox + forked child) and judging
           (this process); then the same notebooks from `cores` threads at once (the pool's throughput).
2. child:  the same plans run by grader.child in a child forked from a process set up like the pool's
           worker (torch and IPython imported), without bubblewrap: as the worker is today, and with what a
           warmer worker would do first (autograd's lazy imports; gc.freeze()); plus the time per plan item
           (code cells vs observing test cells, slowest items).
3. sandbox: the fixed cost of one pool task (an empty plan) and of a gc.collect() in a child.
4. nbgrader (with --course, a course built by `benchmarks/autograde.py --keep`): `nbgrader autograde` with
           no Execute at all (nbgrader's other preprocessors only) on a copy of that course: nbgrader's own
           cost per notebook, which runs one notebook at a time whatever the grader does.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import nbformat  # noqa: E402

from grader import course, runner  # noqa: E402

SOLUTIONS = REPO / "solutions" / course.ASSIGNMENT

NULL_PREPROCESSORS = [  # nbgrader's default autograde list without Execute: nbgrader's own work only
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]


def say(text: str = "") -> None:
    print(text, flush=True)


def notebooks() -> dict[str, list[runner.Cell]]:
    result = {}
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        result[path.stem] = runner.cells_to_run(nb, runner.instructor_cells(nb))
    return result


def plan_of(cells: list[runner.Cell]) -> list[dict]:
    """The plan runner._execute sends to the child (same construction)."""
    plan: list[dict] = []
    for cell in cells:
        key = cell.index if cell.index >= 0 else len(cells) + len(plan)
        if cell.graded:
            plan.append({"kind": "test", "index": key, "grade_id": cell.grade_id,
                         "calls": [c.as_dict() for c in cell.calls]})
        else:
            plan.append({"kind": "code", "index": key, "source": cell.source})
    return plan


def part_pool(nbs: dict[str, list[runner.Cell]], repeats: int) -> dict:
    from grader.pool import Pool

    scratch = Path(tempfile.mkdtemp(prefix="profile-trusted-"))
    started = time.monotonic()
    pool = Pool(hide=[scratch])
    startup = time.monotonic() - started
    time.sleep(0.5)
    dead = sum(not w.alive() for w in list(pool.idle.queue))
    say(f"  pool of {pool.size} workers started in {startup:.1f} s; {dead} of them dead 0.5 s later"
        + (" (the first notebooks pay for replacements)" if dead else ""))
    runs: list[float] = []
    original = pool.run

    def timed(plan, timeout):
        t = time.monotonic()
        try:
            return original(plan, timeout)
        finally:
            runs.append(time.monotonic() - t)

    pool.run = timed  # type: ignore[method-assign]
    rows: dict[str, list[tuple[float, float]]] = {name: [] for name in nbs}
    try:
        for name, cells in nbs.items():  # the first round replaces dead workers: not counted
            runner.grade_cells(name, cells, "profile", 120, False, [scratch], pool)
        for _ in range(repeats):
            for name, cells in nbs.items():
                runs.clear()
                t = time.monotonic()
                result = runner.grade_cells(name, cells, "profile", 120, False, [scratch], pool)
                total = time.monotonic() - t
                rows[name].append((runs[0], total - runs[0]))
                assert result.score == result.max_score, (name, result.as_dict())
        for name, values in rows.items():
            run_s = sorted(v[0] for v in values)[len(values) // 2]
            judge_s = sorted(v[1] for v in values)[len(values) // 2]
            say(f"  {name}: pool.run (sandbox + child) {run_s:.2f} s, judging here {judge_s:.2f} s (median of {repeats})")
        jobs = [(n, c) for n, c in nbs.items()] * (2 * pool.size)
        t = time.monotonic()
        with ThreadPoolExecutor(pool.size) as ex:
            list(ex.map(lambda nc: runner.grade_cells(nc[0], nc[1], "profile", 120, False, [scratch], pool), jobs))
        elapsed = time.monotonic() - t
        say(f"  {len(jobs)} notebooks from {pool.size} threads: {elapsed:.2f} s = {len(jobs) / elapsed:.2f} notebooks/s "
            "(the pool's throughput, nbgrader not included)")
        empty = []
        for _ in range(5):
            t = time.monotonic()
            original([], 60)
            empty.append(time.monotonic() - t)
        gc_runs = []
        for _ in range(3):
            t = time.monotonic()
            original([{"kind": "code", "index": 0, "source": "import gc; gc.collect()"}], 60)
            gc_runs.append(time.monotonic() - t)
        say(f"  sandbox: an empty task costs {sorted(empty)[2]:.3f} s; a task that calls gc.collect() once "
            f"{sorted(gc_runs)[1]:.3f} s")
        return {"startup_seconds": startup, "workers_dead_after_start": dead,
                "per_notebook": {n: {"pool_run": sorted(v[0] for v in vals)[len(vals) // 2],
                                     "judge": sorted(v[1] for v in vals)[len(vals) // 2]} for n, vals in rows.items()},
                "throughput_notebooks_per_second": len(jobs) / elapsed, "empty_task_seconds": sorted(empty)[2],
                "gc_collect_task_seconds": sorted(gc_runs)[1]}
    finally:
        pool.close()
        shutil.rmtree(scratch, ignore_errors=True)


_CHILD_SCRIPT = r"""
import gc, json, os, sys, time
os.environ.update(OMP_NUM_THREADS="1", GRADER_NO_DRAW="1", MPLBACKEND="Agg", PYTHONWARNINGS="ignore")
sys.path.insert(0, sys.argv[1])
import IPython.core.interactiveshell, torch   # what grader.worker imports
from grader import child
mode = sys.argv[3]
if "warm" in mode:   # the lazy imports autograd and gradcheck trigger on first use (sympy among them)
    import torch.fx.experimental.symbolic_shapes
    x = torch.rand(3, dtype=torch.double, requires_grad=True)
    (g,) = torch.autograd.grad((x ** 3).sum(), x, create_graph=True)
    g.sum().backward()
    torch.autograd.gradcheck(lambda t: t ** 2, (x,)); torch.autograd.gradgradcheck(lambda t: t ** 2, (x,))
if "freeze" in mode:  # the worker's objects leave the collector's reach: a child's gc.collect() skips them
    gc.collect(); gc.freeze()


def per_item(plan, results):
    # The plan item by item, timed (child.run turns profiling off before observing, so no cProfile here).
    from IPython.core.interactiveshell import InteractiveShell
    kept = child.snapshot()
    shell = InteractiveShell.instance()
    rows = []
    for item in plan:
        t = time.monotonic()
        if item["kind"] == "code":
            shell.run_cell(item["source"], store_history=False)
        else:
            child.restore(kept)
            for call in item["calls"]:
                try:
                    child.observe_call(call, shell.user_ns)
                except Exception:
                    pass
        first = (item.get("source") or item.get("grade_id") or "").strip().split("\n")[0][:60]
        rows.append([time.monotonic() - t, item["kind"], first])
    return rows


out = {}
for task in json.loads(sys.argv[2]):
    for rep in range(3):
        r, w = os.pipe()
        t = time.monotonic()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            fd = os.open(os.devnull, os.O_RDWR)
            for f in (0, 1, 2):
                os.dup2(fd, f)
            os.chdir(task["dir"])
            torch.set_num_threads(1)
            plan_path = os.path.join(task["dir"], "plan.json")
            if rep < 2:
                child.main(plan_path, os.path.join(task["dir"], f"results-{rep}.jsonl"))
                rows = []
            else:
                rows = per_item(json.load(open(plan_path)), None)
            os.write(w, json.dumps(rows).encode())
            os._exit(0)
        os.close(w)
        data = b""
        while chunk := os.read(r, 65536):
            data += chunk
        os.close(r)
        os.waitpid(pid, 0)
        entry = out.setdefault(task["name"], {"wall": [], "items": []})
        if rep < 2:
            entry["wall"].append(time.monotonic() - t)
        else:
            entry["items"] = json.loads(data)
print(json.dumps(out))
"""

MODES = {"as-is": "worker as it is (torch and IPython imported)",
         "warm": "+ autograd's lazy imports done in the worker",
         "freeze": "+ gc.freeze() in the worker",
         "warm+freeze": "+ both"}


def part_child(nbs: dict[str, list[runner.Cell]]) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="profile-child-"))
    tasks = []
    for name, cells in nbs.items():
        folder = scratch / name
        folder.mkdir()
        (folder / "plan.json").write_text(json.dumps(plan_of(cells)), encoding="utf-8")
        tasks.append({"name": name, "dir": str(folder)})
    result: dict = {}
    try:
        for mode, label in MODES.items():
            done = subprocess.run([sys.executable, "-c", _CHILD_SCRIPT, str(REPO), json.dumps(tasks), mode],
                                  capture_output=True, text=True, check=True)
            data = json.loads(done.stdout.strip().splitlines()[-1])
            walls = {n: min(v["wall"]) for n, v in data.items()}
            say(f"  {label:45} " + ", ".join(f"{n[:2]} {w:.2f} s" for n, w in walls.items())
                + f"  = {sum(walls.values()):.2f} s per student")
            result[mode] = {"wall": walls}
            if mode in ("as-is", "warm+freeze"):
                for name, v in data.items():
                    items = v["items"]
                    code = sum(i[0] for i in items if i[1] == "code")
                    test = sum(i[0] for i in items if i[1] != "code")
                    top = sorted(items, reverse=True)[:2]
                    say(f"      {name}: code cells {code:.2f} s, test cells (observing) {test:.2f} s; slowest: "
                        + "; ".join(f"{t:.2f} s {kind} `{first}`" for t, kind, first in top))
                    result[mode][name] = {"code_cells": code, "test_cells": test, "slowest": top}
        return result
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def part_nbgrader(course_dir: Path) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="profile-nbgrader-"))
    try:
        root = scratch / "course"
        root.mkdir()
        os.symlink(REPO / "solutions", root / "solutions")
        shutil.copytree(course_dir / "release", root / "release")
        shutil.copytree(course_dir / "submitted", root / "submitted")
        base_db = course_dir.parent / "base" / "gradebook.db"
        if not base_db.exists():
            raise SystemExit(f"{base_db} not found: give --course the ours/ folder of `autograde.py --keep`")
        shutil.copy(base_db, root / "gradebook.db")
        (root / "nbgrader_config.py").write_text(
            "c = get_config()  # noqa: F821\n"
            f"load_subconfig({str(REPO / 'nbgrader_config.py')!r})  # noqa: F821\n"
            f"c.Autograde.autograde_preprocessors = {NULL_PREPROCESSORS!r}\n", encoding="utf-8")
        count = len(list((root / "submitted").glob(f"*/{course.ASSIGNMENT}/*.ipynb")))
        command = course.nbgrader_command("autograde", course.ASSIGNMENT, f"--CourseDirectory.root={root}")
        t = time.monotonic()
        first = None
        process = subprocess.Popen(command, cwd=root, env=course.nbgrader_env(), stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
        assert process.stdout is not None
        for line in process.stdout:
            if "] Autograding " in line and first is None:
                first = time.monotonic() - t
        process.wait()
        total = time.monotonic() - t
        per = (total - (first or 0)) / count
        say(f"  nbgrader autograde without Execute: {count} notebooks in {total:.1f} s (startup {first or 0:.1f} s, "
            f"then {per:.3f} s per notebook, one at a time) = at most {1 / per:.1f} notebooks/s whatever the grader")
        return {"notebooks": count, "seconds": total, "startup_seconds": first, "seconds_per_notebook": per}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="rounds of the sequential pool timing")
    parser.add_argument("--course", type=Path, help="the ours/ folder of a course kept by `autograde.py --keep`")
    parser.add_argument("--json", type=Path, help="write the numbers as JSON here")
    args = parser.parse_args()
    nbs = notebooks()
    say(f"Profile of trusted grading on {os.cpu_count()} cores (instructor notebooks: {', '.join(nbs)})")
    result: dict = {"cores": os.cpu_count()}
    say("\n1+3. the pool (bubblewrap workers, one forked child per notebook), driven by grader.runner.grade_cells")
    result["pool"] = part_pool(nbs, args.repeats)
    say("\n2. inside the child (forked from a process set up like the worker, no sandbox; best of 2)")
    result["child"] = part_child(nbs)
    if args.course:
        say("\n4. nbgrader's own work per notebook")
        result["nbgrader"] = part_nbgrader(args.course.resolve())
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        say(f"\nJSON: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
