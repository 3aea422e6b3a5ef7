#!/usr/bin/env python
"""Where does trusted autograding spend its time? A breakdown to read next to benchmarks/autograde.py.

    .venv/bin/python benchmarks/profile_trusted.py                 # all parts, about a minute on 2 cores
    .venv/bin/python benchmarks/profile_trusted.py --course DIR    # also a built class, and nbgrader's own overhead
    .venv/bin/python benchmarks/profile_trusted.py --course DIR --parts class    # only the class's notebooks

1. pool:   start a grader.isolation.pool.Pool, then grade the instructor notebooks one at a time with
           grader.judge.runner.grade_cells, splitting each into pool.run_plan (sandbox + forked child) and judging
           (this process); then the same notebooks from `cores` threads at once (the pool's throughput).
2. child:  the same plans run by grader.sandboxed.child in a child forked from a process warmed up as the pool's worker
           (grader.sandboxed.worker.warm_up), without bubblewrap: code cells against observing test cells, the slowest items,
           and how many restores of the guard observing took and their time.
2b. class: with --course, the same on every submission of a course built by `benchmarks/autograde.py --keep`
           (e.g. its all-24 folder): per notebook the mean and the slowest students, and the cells and checks that
           cost the class the most, summed over its students.
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

from grader.classroom import course  # noqa: E402
from grader.judge import runner  # noqa: E402

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
    from grader.isolation.pool import Pool

    scratch = Path(tempfile.mkdtemp(prefix="profile-trusted-"))
    started = time.monotonic()
    pool = Pool(hide=[scratch])
    startup = time.monotonic() - started
    time.sleep(0.5)
    dead = sum(not w.alive() for w in list(pool.idle.queue))
    say(f"  pool of {pool.size} workers started in {startup:.1f} s; {dead} of them dead 0.5 s later"
        + (" (the first notebooks pay for replacements)" if dead else ""))
    runs: list[float] = []
    original = pool.run_plan

    def timed(plan, timeout):
        t = time.monotonic()
        try:
            return original(plan, timeout)
        finally:
            runs.append(time.monotonic() - t)

    pool.run_plan = timed  # type: ignore[method-assign]
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
            say(f"  {name}: pool.run_plan (sandbox + child) {run_s:.2f} s, judging here {judge_s:.2f} s (median of {repeats})")
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
import json, os, socket, sys, threading, time
os.environ.update(OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore", MPLBACKEND="module://matplotlib_inline.backend_inline",
                  NBGRADER_EXECUTION="autograde")
sys.path.insert(0, sys.argv[1])
import torch
from grader.sandboxed import child, worker
worker.warm_up()  # as the pool's worker does before it forks a child per notebook


def listen(address, events):
    server = socket.socket(socket.AF_UNIX)
    server.bind(address)
    server.listen(64)

    def serve():
        while True:
            conn, _ = server.accept()  # one connection per notebook: each line timed as it arrives
            data = b""
            while chunk := conn.recv(65536):
                now = time.monotonic()
                data += chunk
                *lines, data = data.split(b"\n")
                for line in lines:
                    entry = json.loads(line)
                    events.append((now, entry.get("event"), entry.get("index")))
            conn.close()
    threading.Thread(target=serve, daemon=True).start()


out = {}
for task in json.loads(sys.argv[2]):
    plan = json.load(open(os.path.join(task["dir"], "plan.json")))
    walls, rows, restores = [], [], []
    for rep in range(2):
        events = []
        address = os.path.join(task["dir"], f"socket-{rep}")
        listen(address, events)
        counts = os.path.join(task["dir"], f"restores-{rep}.json")
        t = time.monotonic()
        pid = os.fork()
        if pid == 0:  # the child: as grader.sandboxed.worker's, without bubblewrap; counts the guard's restores
            try:
                torch.set_num_threads(1)
                fd = os.open(os.devnull, os.O_RDWR)
                for f in (1, 2):
                    os.dup2(fd, f)
                seen = [0, 0.0]
                make_restorer = child._restorer

                def counting(guard):
                    restore = make_restorer(guard)

                    def counted():
                        started = time.perf_counter()
                        try:
                            return restore()
                        finally:
                            seen[0] += 1
                            seen[1] += time.perf_counter() - started
                    return counted
                child._restorer = counting
                child.run_cells(plan, address)
                with open(counts, "w") as f:
                    json.dump(seen, f)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        walls.append(time.monotonic() - t)
        time.sleep(0.1)  # the last messages
        start = {}
        rows = []
        for when, event, index in events:
            if event == "start":
                start[index] = when
            elif event in ("done", "observed") and index in start:
                rows.append([when - start[index], "code" if event == "done" else "test", index])
        restores.append(json.load(open(counts)) if os.path.exists(counts) else [0, 0.0])  # os._exit in a cell
    first = {item["index"]: (item.get("source") or item.get("grade_id") or "").strip().split("\n")[0][:60] for item in plan}
    out[task["name"]] = {"wall": min(walls), "items": [[t, kind, first.get(i, "")] for t, kind, i in rows],
                         "restores": min(restores, key=lambda r: r[1])}
print(json.dumps(out))
"""


def part_child(nbs: dict[str, list[runner.Cell]], quiet: bool = False) -> dict:
    """Each notebook's plan in a child forked from a process warmed up as the pool's worker, without bubblewrap:
    where the time goes (code cells against observing test cells, the slowest items, the guard's restores)."""
    scratch = Path(tempfile.mkdtemp(prefix="profile-child-"))
    tasks = []
    for name, cells in nbs.items():
        folder = scratch / name
        folder.mkdir(parents=True)
        (folder / "plan.json").write_text(json.dumps(plan_of(cells)), encoding="utf-8")
        tasks.append({"name": name, "dir": str(folder)})
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD_SCRIPT, str(REPO), json.dumps(tasks)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"part 2 (the child) failed with exit code {done.returncode}:\n{done.stderr[-2000:]}")
        data = json.loads(done.stdout.strip().splitlines()[-1])
        result: dict = {}
        for name, v in data.items():
            items = v["items"]
            code = sum(i[0] for i in items if i[1] == "code")
            test = sum(i[0] for i in items if i[1] == "test")
            count, seconds = v["restores"]
            top = sorted(items, reverse=True)[:2]
            if quiet:
                result[name] = {"wall": v["wall"], "items": items}
                continue
            say(f"  {name}: {v['wall']:.2f} s: code cells {code:.2f} s, test cells (observing) {test:.2f} s, of which "
                f"the guard's {count} restores {seconds:.2f} s; slowest: "
                + "; ".join(f"{t:.2f} s {kind} `{first}`" for t, kind, first in top))
            result[name] = {"wall": v["wall"], "code_cells": code, "test_cells": test, "restores": count,
                            "restore_seconds": seconds, "slowest": top}
        return result
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def class_notebooks(course_dir: Path) -> dict[str, list[runner.Cell]]:
    """Every submission of a kept course, as the plans the grader sends (test cells from the instructor's source)."""
    trusted = {path.stem: runner.instructor_cells(nbformat.read(str(path), as_version=4))
               for path in sorted(SOLUTIONS.glob("*.ipynb"))}
    result = {}
    for path in sorted((course_dir / "submitted").glob(f"*/{course.ASSIGNMENT}/*.ipynb")):
        try:
            nb = nbformat.read(str(path), as_version=4)
        except Exception:  # an unreadable submission costs the sandbox nothing
            continue
        result[f"{path.parent.parent.name}/{path.stem}"] = runner.cells_to_run(nb, trusted.get(path.stem, {}))
    return result


def part_class(course_dir: Path) -> dict:
    """The child's time on every submission of a kept course: per notebook, the mean and the worst students, and
    the items (cells, checks) that take the most time summed over the class: where a class's time goes."""
    nbs = class_notebooks(course_dir)
    say(f"  {len(nbs)} submissions of {course_dir}")
    data = part_child(nbs, quiet=True)
    by_notebook: dict[str, list[tuple[float, str]]] = {}
    items: dict[tuple[str, str], list[float]] = {}
    for name, row in data.items():
        student, notebook = name.split("/", 1)
        by_notebook.setdefault(notebook, []).append((row["wall"], student))
        for seconds, kind, first in row["items"]:
            items.setdefault((notebook, f"{kind} `{first}`"), []).append(seconds)
    for notebook, walls in sorted(by_notebook.items()):
        walls.sort(reverse=True)
        mean = sum(w for w, _ in walls) / len(walls)
        say(f"  {notebook}: mean {mean:.2f} s over {len(walls)} students; slowest: "
            + ", ".join(f"{s} {w:.2f} s" for w, s in walls[:3]))
    total = sum(sum(w for w, _ in walls) for walls in by_notebook.values())
    say(f"  the class: {total:.1f} s of child time, {total / max(len(data), 1):.2f} s per notebook; the items that cost most:")
    for (notebook, item), times in sorted(items.items(), key=lambda kv: -sum(kv[1]))[:15]:
        say(f"    {sum(times):6.1f} s ({100 * sum(times) / total:4.1f}%) {notebook}: {item} "
            f"({len(times)} runs, mean {sum(times) / len(times):.3f} s)")
    return {"notebooks": len(data), "seconds": total,
            "per_notebook": {n: sum(w for w, _ in v) / len(v) for n, v in by_notebook.items()}}


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
            raise SystemExit(f"{base_db} not found: give --course a course folder of `autograde.py --keep` "
                             "(e.g. WORKDIR/all-24)")
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
    parser.add_argument("--course", type=Path, help="a course folder kept by `autograde.py --keep` (e.g. WORKDIR/all-24)")
    parser.add_argument("--json", type=Path, help="write the numbers as JSON here")
    parser.add_argument("--parts", default="pool,child,class,nbgrader",
                        help="which parts to run, comma-separated (class and nbgrader need --course)")
    args = parser.parse_args()
    nbs = notebooks()
    say(f"Profile of trusted grading on {os.cpu_count()} cores (instructor notebooks: {', '.join(nbs)})")
    result: dict = {"cores": os.cpu_count()}
    parts = set(args.parts.split(","))
    if "pool" in parts:
        say("\n1+3. the pool (bubblewrap workers, one forked child per notebook), driven by grader.judge.runner.grade_cells")
        result["pool"] = part_pool(nbs, args.repeats)
    if "child" in parts:
        say("\n2. inside the child (forked from a process set up like the worker, no sandbox; best of 2)")
        result["child"] = part_child(nbs)
    if args.course and "class" in parts:
        say("\n2b. inside the child, every submission of the course (best of 2)")
        result["class"] = part_class(args.course.resolve())
    if args.course and "nbgrader" in parts:
        say("\n4. nbgrader's own work per notebook")
        result["nbgrader"] = part_nbgrader(args.course.resolve())
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        say(f"\nJSON: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
