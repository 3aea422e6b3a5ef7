#!/usr/bin/env python
"""Throughput and agreement: our trusted, parallel autograde versus stock nbgrader, on one synthetic class.

    .venv/bin/python benchmarks/autograde.py                       # 100 students x 3 notebooks, stock on 10 of them
    .venv/bin/python benchmarks/autograde.py --students 40 --stock-students 5 --seed 7 --json result.json

1. Builds a synthetic class, deterministic from --seed: correct students (instructor answers and the
   correct alternatives of examples/alternatives), students with typical mistakes (examples/mistakes, plus a
   few made-up ones for notebook 1, which the catalogue does not cover), blank students and a few adversarial
   ones (see ADVERSARIAL; --infinite-loop adds one that never ends).
2. Runs `nbgrader autograde` with the repository's config (grader.nbgrader_plugins.TrustedExecute) on the
   whole class, and stock nbgrader (nbgrader's default preprocessors, i.e. nbgrader.preprocessors.Execute)
   on a deterministic sample of --stock-students students, each in its own temporary course directory.
3. Compares the two gradebooks per student x exercise: honest submissions must get the same score from both
   (exit code 1 otherwise); differences on adversarial notebooks are printed, labelled, and are expected.
   Our scores on honest submissions are also compared with what the catalogue's `# expect:` lines predict.
4. Prints wall times, notebooks per second, the throughput ratio (ours / stock), CPU per notebook, and the
   CPU other processes took meanwhile (a shared machine slows ours, which uses every core, most); --json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import nbformat  # noqa: E402

from grader import course  # noqa: E402
from grader.runner import exercise_of  # noqa: E402

ASSIGNMENT = course.ASSIGNMENT
SOLUTIONS = REPO / "solutions" / ASSIGNMENT
MISTAKES = REPO / "examples" / "mistakes"
ALTERNATIVES = REPO / "examples" / "alternatives"

# nbgrader 0.9.6's default Autograde.autograde_preprocessors (checked against nbgrader at run time).
STOCK_PREPROCESSORS = [
    "nbgrader.preprocessors.Execute",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]


def say(text: str = "") -> None:
    print(text, flush=True)


# --- the answers a synthetic student can give ------------------------------------------------------------

# Notebook 1's exercises have no catalogue in examples/mistakes: typical slips, written for this benchmark.
# They are honest (no tampering); the scores they get are whatever the checks say (no prediction).
MADE_UP_MISTAKES: dict[str, dict[str, str]] = {
    "vjp": {
        "ones-as-grad-outputs": """\
def vector_jacobian_product(f, x, v):
    out = f(x)
    (g,) = torch.autograd.grad(out, x, grad_outputs=torch.ones_like(out))
    return g""",
        "negated": """\
def vector_jacobian_product(f, x, v):
    out = f(x)
    (g,) = torch.autograd.grad(out, x, grad_outputs=v)
    return -g""",
        "uses-backward": """\
def vector_jacobian_product(f, x, v):
    out = f(x)
    out.backward(v)
    return x.grad.clone()""",
    },
    "accumulate": {
        "keeps-stale-grad": """\
def mean_gradient_over_batches(loss_fn, w, batches):
    for batch in batches:
        (loss_fn(w, batch) / len(batches)).backward()
    return w.grad.clone()""",
        "sum-not-mean": """\
def mean_gradient_over_batches(loss_fn, w, batches):
    w.grad = None
    for batch in batches:
        loss_fn(w, batch).backward()
    return w.grad.clone()""",
        "returns-grad-itself": """\
def mean_gradient_over_batches(loss_fn, w, batches):
    w.grad = None
    for batch in batches:
        (loss_fn(w, batch) / len(batches)).backward()
    return w.grad""",
    },
    "secondderiv": {
        "no-create-graph": """\
def second_derivative(f, x):
    y = f(x)
    (dy,) = torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y))
    (d2y,) = torch.autograd.grad(dy, x, grad_outputs=torch.ones_like(dy))
    return d2y""",
        "first-derivative-only": """\
def second_derivative(f, x):
    y = f(x)
    (dy,) = torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y))
    return dy""",
    },
}

PATCH_CHECKS = """\
# Make every check pass: replace the grader's check functions in this kernel.
from grader import basics as _b, checks as _c
for _name in ("forward", "first_derivatives", "second_derivatives", "structure"):
    setattr(_c, _name, lambda *a, **k: None)
for _name in [n for n in dir(_b) if n.startswith("check_")]:
    setattr(_b, _name, lambda *a, **k: None)
"""

GRADCHECK_PATCH = """\
# gradcheck and gradgradcheck always say yes
torch.autograd.gradcheck = lambda *a, **k: True
torch.autograd.gradgradcheck = lambda *a, **k: True
"""

WARNING_SQUARE = """\
import warnings


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        warnings.warn("Square.backward: is this right?")
        x, = ctx.saved_tensors
        return grad_out * 2 * x"""

# kind -> (notebook it tampers with, description). The rest of an adversarial student's class is correct.
ADVERSARIAL: dict[str, tuple[str, str]] = {
    "gradcheck-patch": ("03_double_backward", "square: wrong backward (x, not 2x) and gradcheck/gradgradcheck "
                                              "monkeypatched to always pass"),
    "patch-checks": ("01_autograd_basics", "blank notebook 1 whose first answer cell replaces the grader's "
                                           "check functions with no-ops"),
    "os-exit": ("03_double_backward", "exp: correct answer followed by os._exit(1) (kills the kernel)"),
    "warning-in-backward": ("03_double_backward", "square: correct answer whose backward emits a warning"),
}
INFINITE_LOOP = ("02_custom_function", "linear: `while True: pass` in the answer cell (costs the timeout)")


@dataclass
class Student:
    name: str
    kind: str  # correct, mistakes, blank, adversarial:<kind>
    answers: dict[str, str] = field(default_factory=dict)  # grade_id -> answer cell source (missing: the stub)
    plan: dict[str, str] = field(default_factory=dict)  # exercise -> what was handed in, readable
    adversarial_notebook: str = ""  # the notebook (stem) an adversarial student tampers with
    expected: dict[str, float | None] = field(default_factory=dict)  # exercise -> predicted points (honest only)


@dataclass
class Layout:
    notebooks: dict[str, list[str]]  # notebook stem -> its exercises, in order
    points: dict[str, float]  # test grade_id -> points
    solutions: dict[str, str]  # exercise (= answer grade_id) -> instructor's answer

    def notebook_of(self, exercise: str) -> str:
        return next(nb for nb, exercises in self.notebooks.items() if exercise in exercises)

    def full(self, exercise: str) -> float:
        return sum(p for g, p in self.points.items() if exercise_of(g) == exercise)


def read_layout() -> Layout:
    notebooks: dict[str, list[str]] = {}
    points: dict[str, float] = {}
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        exercises: list[str] = []
        for cell in nbformat.read(str(path), as_version=4).cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
                points[meta["grade_id"]] = float(meta.get("points") or 0)
                if exercise_of(meta["grade_id"]) not in exercises:
                    exercises.append(exercise_of(meta["grade_id"]))
        notebooks[path.stem] = exercises
    return Layout(notebooks, points, course.answer_sources(SOLUTIONS))


def catalogue(folder: Path) -> dict[str, list[Path]]:
    """exercise -> its catalogue files (mistakes or alternatives), from their `# exercise:` header."""
    found: dict[str, list[Path]] = {}
    for path in sorted(folder.glob("*.py")):
        match = re.search(r"^# exercise: (\S+)", path.read_text(encoding="utf-8"), re.M)
        if match:
            found.setdefault(match.group(1), []).append(path)
    return found


def predicted_points(path: Path, exercise: str, layout: Layout) -> float | None:
    """Points a catalogued mistake should get, from its `# expect:` line (None if it has none)."""
    match = re.search(r"^# expect: (.*)$", path.read_text(encoding="utf-8"), re.M)
    if not match:
        return None
    outcomes = dict(item.split("=", 1) for item in match.group(1).split())
    return sum(layout.points[f"{exercise}-{suffix}"] for suffix, outcome in outcomes.items() if outcome == "pass")


def build_class(n: int, seed: int, layout: Layout, infinite_loop: bool) -> list[Student]:
    """n students, deterministic from seed: ~15% correct, ~5% blank, a few adversarial, the rest with mistakes."""
    rng = random.Random(seed)
    mistakes, alternatives = catalogue(MISTAKES), catalogue(ALTERNATIVES)
    adversarial = list(ADVERSARIAL) + (["infinite-loop"] if infinite_loop else [])
    kinds = ["correct", "mistakes", "blank"] + [f"adversarial:{a}" for a in adversarial]
    slots = kinds[:n]  # every kind once when the class is big enough
    n_adv = max(len(adversarial), n // 25)
    extra_adv = [f"adversarial:{adversarial[i % len(adversarial)]}" for i in range(len(adversarial), n_adv)]
    slots += extra_adv[: max(0, n - len(slots))]
    weights = {"correct": 0.15, "blank": 0.05}
    while len(slots) < n:
        counts = {k: slots.count(k) for k in weights}
        below = [k for k, w in weights.items() if counts[k] < round(w * n)]
        slots.append(below[0] if below else "mistakes")
    rng.shuffle(slots)

    students = []
    for i, kind in enumerate(slots):
        s = Student(f"s{i:03d}_{kind.split(':')[-1].replace('-', '_')}", kind)
        for exercise in [e for nb in layout.notebooks.values() for e in nb]:
            if kind == "blank":
                choice = "stub"
            elif kind == "mistakes":
                choice = rng.choices(["solution", "alternative", "mistake", "stub"], [30, 10, 45, 15])[0]
                if choice == "alternative" and not alternatives.get(exercise):
                    choice = "solution"
            else:
                choice = rng.choices(["solution", "alternative"], [75, 25])[0]
                if choice == "alternative" and not alternatives.get(exercise):
                    choice = "solution"
            if choice == "solution":
                s.answers[exercise] = layout.solutions[exercise]
                s.plan[exercise] = "solution"
                s.expected[exercise] = layout.full(exercise)
            elif choice == "alternative":
                path = rng.choice(alternatives[exercise])
                s.answers[exercise] = course.mistake_source(path)
                s.plan[exercise] = f"alternative {path.name}"
                s.expected[exercise] = layout.full(exercise)
            elif choice == "mistake" and mistakes.get(exercise):
                path = rng.choice(mistakes[exercise])
                s.answers[exercise] = course.mistake_source(path)
                s.plan[exercise] = f"mistake {path.name}"
                s.expected[exercise] = predicted_points(path, exercise, layout)
            elif choice == "mistake":
                name = rng.choice(sorted(MADE_UP_MISTAKES[exercise]))
                s.answers[exercise] = MADE_UP_MISTAKES[exercise][name]
                s.plan[exercise] = f"made-up mistake {exercise}:{name}"
                s.expected[exercise] = None
            else:
                s.plan[exercise] = "stub (left blank)"
                s.expected[exercise] = 0.0
        if kind.startswith("adversarial:"):
            adv = kind.split(":", 1)[1]
            notebook, _ = INFINITE_LOOP if adv == "infinite-loop" else ADVERSARIAL[adv]
            s.adversarial_notebook = notebook
            if adv == "gradcheck-patch":
                s.answers["square"] = GRADCHECK_PATCH + "\n" + course.mistake_source(MISTAKES / "square-missing-factor.py")
            elif adv == "patch-checks":
                first, *rest = layout.notebooks[notebook]
                s.answers[first] = PATCH_CHECKS
                for exercise in rest:
                    s.answers.pop(exercise, None)
            elif adv == "os-exit":
                s.answers["exp"] = layout.solutions["exp"] + "\n\nimport os\nos._exit(1)"
            elif adv == "warning-in-backward":
                s.answers["square"] = WARNING_SQUARE
            elif adv == "infinite-loop":
                s.answers["linear"] = "while True:\n    pass"
            for exercise in layout.notebooks[notebook]:
                s.plan[exercise] = f"ADVERSARIAL {adv}" if exercise in s.answers or adv == "patch-checks" else "stub"
                s.expected[exercise] = None
        students.append(s)
    return students


def stock_sample(students: list[Student], m: int, seed: int) -> list[Student]:
    """m students for stock nbgrader: one of each adversarial kind, a correct and a blank one, then mistakes."""
    rng = random.Random(seed + 1)
    by_kind: dict[str, list[Student]] = {}
    for s in students:
        by_kind.setdefault(s.kind, []).append(s)
    for group in by_kind.values():
        rng.shuffle(group)
    order = [k for k in by_kind if k.startswith("adversarial:")] + ["correct", "blank"]
    picked: list[Student] = [by_kind[k].pop() for k in order if k in by_kind and by_kind[k]][:m]
    rest = by_kind.get("mistakes", []) + [s for k, g in by_kind.items() if k != "mistakes" for s in g]
    picked += rest[: max(0, m - len(picked))]
    return sorted(picked, key=lambda s: s.name)


# --- course directories and nbgrader -------------------------------------------------------------------


def make_base(workdir: Path) -> Path:
    """A course with the assignment generated (release/ and a gradebook holding the instructor's cells)."""
    base = workdir / "base"
    base.mkdir(parents=True)
    os.symlink(REPO / "solutions", base / "solutions")
    command = course.nbgrader_command("generate_assignment", ASSIGNMENT, "--force",
                                      "--CourseDirectory.release_directory=release", f"--CourseDirectory.root={base}")
    done = subprocess.run(command, cwd=REPO, env=course.nbgrader_env(), capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"nbgrader generate_assignment failed:\n{done.stdout}\n{done.stderr}")
    return base


def make_course(base: Path, root: Path, students: list[Student]) -> None:
    shutil.copytree(base, root, symlinks=True)
    for s in students:
        course.build_submission(root / "release" / ASSIGNMENT, s.answers, root / "submitted" / s.name / ASSIGNMENT)


def write_stock_config(root: Path) -> None:
    (root / "nbgrader_config.py").write_text(
        "# Stock nbgrader: the course's config, with nbgrader's default autograde preprocessors (Execute).\n"
        "c = get_config()  # noqa: F821\n"
        f"load_subconfig({str(REPO / 'nbgrader_config.py')!r})  # noqa: F821\n"
        f"c.Autograde.autograde_preprocessors = {STOCK_PREPROCESSORS!r}\n", encoding="utf-8")


@dataclass
class Run:
    label: str
    command: list[str]
    cwd: str
    notebooks: int
    wall_seconds: float = 0.0
    returncode: int = 0
    first_notebook_at: float = 0.0  # seconds after start when nbgrader began the first notebook
    last_notebook_at: float = 0.0
    notebooks_started: int = 0
    trusted_lines: int = 0  # "trusted grading" log lines (one per notebook graded by TrustedExecute)
    failed_students: list[str] = field(default_factory=list)  # nbgrader: "error processing assignment ... for student"
    cpu_seconds: float = 0.0  # CPU time of nbgrader and everything it started (reaped children)
    nbgrader_process_cpu: float = 0.0  # of the nbgrader process alone (its threads: nbgrader, and our judging)
    machine_busy_seconds: float = 0.0  # CPU time the whole machine spent busy meanwhile (/proc/stat)
    load_average: list[float] = field(default_factory=list)  # 1-minute load average sampled during the run

    @property
    def other_cpu_seconds(self) -> float:
        """CPU time used by processes outside this run (other users, other jobs): it slows the run down."""
        return max(0.0, self.machine_busy_seconds - self.cpu_seconds)
    log: str = ""

    @property
    def per_second(self) -> float:
        return self.notebooks / self.wall_seconds if self.wall_seconds else 0.0

    @property
    def steady_per_second(self) -> float:
        """Notebooks per second between nbgrader's first and last notebook (startup excluded)."""
        span = self.last_notebook_at - self.first_notebook_at
        return (self.notebooks_started - 1) / span if span > 0 and self.notebooks_started > 1 else 0.0


def machine_busy() -> float:
    """Seconds of CPU time the machine has spent busy since boot, all cores (0 where /proc/stat is absent)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def tree_cpu(root_pid: int) -> tuple[float, float]:
    """CPU seconds of ``root_pid`` and its living descendants, children they have reaped included (/proc);
    and of ``root_pid`` alone (its own threads: for nbgrader, nbgrader itself and our judging threads)."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    own = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents[int(entry)] = int(fields[1])
        cpu[int(entry)] = sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
        if int(entry) == root_pid:
            own = sum(int(x) for x in fields[11:13]) / tick
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, [root_pid]
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0.0)
        todo += children.get(pid, [])
    return total, own


def sample(run: Run, pid: int, stop: threading.Event, seen: list[float]) -> None:
    """Every half second: the load average, and the CPU time of nbgrader's process tree (sandboxes included)."""
    last_load = 0.0
    while not stop.wait(0.5):
        total, own = tree_cpu(pid)
        seen.append(total)
        run.nbgrader_process_cpu = max(run.nbgrader_process_cpu, own)
        if time.monotonic() - last_load >= 2.0:
            last_load = time.monotonic()
            run.load_average.append(os.getloadavg()[0])


def run_nbgrader(run: Run, log_path: Path) -> Run:
    say(f"[{run.label}] $ (cd {run.cwd} && {shlex.join(run.command)})")
    busy0, cpu0 = machine_busy(), children_cpu()
    stop, seen = threading.Event(), [0.0]
    started = time.monotonic()
    step = max(1, run.notebooks // 15)
    with open(log_path, "w", encoding="utf-8") as log:
        process = subprocess.Popen(run.command, cwd=run.cwd, env=course.nbgrader_env(), stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, bufsize=1)
        sampler = threading.Thread(target=sample, args=(run, process.pid, stop, seen), daemon=True)
        sampler.start()
        assert process.stdout is not None
        for line in process.stdout:
            log.write(line)
            now = time.monotonic() - started
            if "] Autograding " in line:
                run.notebooks_started += 1
                run.first_notebook_at = run.first_notebook_at or now
                run.last_notebook_at = now
                if run.notebooks_started % step == 0 or run.notebooks_started == 1:
                    say(f"[{run.label}] {now:6.1f} s  started notebook {run.notebooks_started}/{run.notebooks}")
            elif "trusted grading" in line:
                run.trusted_lines += 1
            elif "There was an error processing assignment '" in line:
                run.failed_students.append(line.rstrip().rsplit("'", 2)[-2])
                say(f"[{run.label}] {now:6.1f} s  {line.rstrip()[:200]}")
            elif "| ERROR]" in line or "Traceback" in line:
                say(f"[{run.label}] {now:6.1f} s  {line.rstrip()[:200]}")
        run.returncode = process.wait()
    run.wall_seconds = time.monotonic() - started
    stop.set()
    sampler.join()
    # Sandboxed workers are not always reaped up the chain: take the larger of rusage and the sampled tree.
    run.cpu_seconds, run.machine_busy_seconds = max(children_cpu() - cpu0, max(seen)), machine_busy() - busy0
    run.log = str(log_path)
    if run.failed_students:
        say(f"[{run.label}] nbgrader could not autograde (removed from autograded/): {', '.join(run.failed_students)}")
    say(f"[{run.label}] done in {run.wall_seconds:.1f} s (exit code {run.returncode}), "
        f"{run.per_second:.2f} notebooks/s; log: {log_path}")
    say(f"[{run.label}] CPU: {run.cpu_seconds:.0f} s used by this run ({run.nbgrader_process_cpu:.0f} s in nbgrader's own "
        f"process, the rest in what it started), {run.other_cpu_seconds:.0f} s by other processes on the machine "
        f"meanwhile ({load_note(run)})")
    return run


def load_note(run: Run) -> str:
    capacity = run.wall_seconds * (os.cpu_count() or 1)
    share = run.other_cpu_seconds / capacity if capacity else 0.0
    peak = max(run.load_average, default=0.0)
    return f"{share:.0%} of the machine's capacity taken by others; peak 1-min load {peak:.1f}"


def executed_by_kernel(root: Path) -> tuple[int, int]:
    """(notebooks whose code cells carry execution counts, notebooks): Execute numbers cells, we do not."""
    numbered = total = 0
    for path in sorted((root / "autograded").glob(f"*/{ASSIGNMENT}/*.ipynb")):
        total += 1
        nb = nbformat.read(str(path), as_version=4)
        numbered += any(c.cell_type == "code" and c.get("execution_count") for c in nb.cells)
    return numbered, total


# --- comparing -----------------------------------------------------------------------------------------


def fmt(entry: tuple[float, float] | None) -> str:
    return "missing" if entry is None else f"{entry[0]:g}/{entry[1]:g}"


def compare(students: list[Student], sample: list[Student], ours: dict, stock: dict, layout: Layout) -> dict[str, Any]:
    honest_disagree, adversarial_diff, adversarial_same, prediction_miss = [], [], [], []
    compared = agreed = 0
    for s in sample:
        for exercise in [e for nb in layout.notebooks.values() for e in nb]:
            notebook = layout.notebook_of(exercise)
            a = ours.get(s.name, {}).get(exercise)
            b = stock.get(s.name, {}).get(exercise)
            row = {"student": s.name, "kind": s.kind, "notebook": notebook, "exercise": exercise,
                   "submitted": s.plan.get(exercise, ""), "ours": fmt(a), "stock": fmt(b)}
            if notebook == s.adversarial_notebook:
                (adversarial_same if a == b else adversarial_diff).append(row)
                continue
            compared += 1
            if a is not None and a == b:
                agreed += 1
            else:
                honest_disagree.append(row)
    for s in students:  # all of ours against the catalogue's predictions, stock sample or not
        for exercise, points in s.expected.items():
            a = ours.get(s.name, {}).get(exercise)
            if points is None or (a is not None and a[0] == points):
                continue
            b = stock.get(s.name, {}).get(exercise)
            verdict = ("not graded by stock: unresolved" if b is None else
                       "stock agrees with ours: the prediction is wrong" if a == b else
                       "stock disagrees with ours (see disagreements)")
            prediction_miss.append({"student": s.name, "exercise": exercise, "submitted": s.plan[exercise],
                                    "ours": fmt(a), "stock": fmt(b),
                                    "predicted": f"{points:g}/{layout.full(exercise):g}", "verdict": verdict})
    missing = [s.name for s in students if s.name not in ours]
    return {"honest_compared": compared, "honest_agreed": agreed, "honest_disagreements": honest_disagree,
            "adversarial_differences": adversarial_diff, "adversarial_same": adversarial_same,
            "prediction_checked": sum(p is not None for s in students for p in s.expected.values()),
            "prediction_misses": prediction_miss, "missing_from_our_gradebook": missing}


def prediction_misses(students: list[Student], ours: dict) -> list[Student]:
    """Students some of whose honest exercise scores (ours) differ from the catalogue's prediction."""
    return [s for s in students if any(p is not None and ours.get(s.name, {}).get(e, (None,))[0] != p
                                       for e, p in s.expected.items())]


def table(rows: list[dict[str, Any]], keys: list[str]) -> str:
    widths = {k: max(len(k), *(len(str(r[k])) for r in rows)) for k in keys}
    lines = ["  ".join(k.ljust(widths[k]) for k in keys)]
    lines += ["  ".join(str(r[k]).ljust(widths[k]) for k in keys) for r in rows]
    return "\n".join("    " + line for line in lines)


# --- main ----------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=100, help="students in the class (3 notebooks each)")
    parser.add_argument("--stock-students", type=int, default=10,
                        help="students graded by stock nbgrader too (a deterministic sample; 0: skip stock)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic class and of the sample")
    parser.add_argument("--adjudicate", type=int, default=5, metavar="N",
                        help="add to stock's run up to N more students whose score (ours) differs from the "
                             "catalogue's prediction, so that stock settles who is right (default 5)")
    parser.add_argument("--infinite-loop", action="store_true",
                        help="add an adversarial student whose notebook never ends (costs the timeout in both)")
    parser.add_argument("--json", type=Path, help="write the results as JSON to this path")
    parser.add_argument("--workdir", type=Path, help="where to build the courses (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the course directories (logs, gradebooks)")
    args = parser.parse_args(argv)
    if args.students < 1 or not 0 <= args.stock_students <= args.students:
        parser.error("need --students >= 1 and 0 <= --stock-students <= --students")

    from nbgrader.converters import Autograde

    default = [c.__name__ for c in Autograde.class_traits()["autograde_preprocessors"].default()]
    if default != [p.rsplit(".", 1)[1] for p in STOCK_PREPROCESSORS]:
        say(f"warning: nbgrader's default autograde preprocessors are {default}; the benchmark uses {STOCK_PREPROCESSORS}")

    command_line = shlex.join([sys.executable, *sys.argv]) if argv is None else shlex.join(argv)
    cores = os.cpu_count() or 1
    layout = read_layout()
    per_student = len(layout.notebooks)
    students = build_class(args.students, args.seed, layout, args.infinite_loop)
    sample = stock_sample(students, args.stock_students, args.seed)
    kinds: dict[str, int] = {}
    for s in students:
        kinds[s.kind] = kinds.get(s.kind, 0) + 1

    say("Autograde benchmark: trusted parallel grading (ours) vs stock nbgrader (Execute)")
    say(f"  machine:  {platform.node()}, {cores} cores, {platform.platform()}, Python {platform.python_version()}")
    say(f"  command:  {command_line}")
    say(f"  class:    {len(students)} students x {per_student} notebooks = {len(students) * per_student} notebooks, "
        f"seed {args.seed}: " + ", ".join(f"{v} {k}" for k, v in sorted(kinds.items())))
    say(f"  stock:    {len(sample)} students ({len(sample) * per_student} notebooks): " + ", ".join(s.name for s in sample))

    workdir = (args.workdir.resolve() if args.workdir else Path(tempfile.mkdtemp(prefix="autograde-bench-")))
    if args.workdir:
        if workdir.exists():
            shutil.rmtree(workdir)
        workdir.mkdir(parents=True)
    try:
        say(f"\n1/4 building the courses in {workdir}")
        t0 = time.monotonic()
        base = make_base(workdir)
        ours_root, stock_root = workdir / "ours", workdir / "stock"
        make_course(base, ours_root, students)
        say(f"    generated the assignment and {len(students) * per_student} submitted notebooks in "
            f"{time.monotonic() - t0:.1f} s")

        say(f"\n2/4 ours: nbgrader autograde with the repository's config (TrustedExecute), {len(students)} students")
        ours = run_nbgrader(Run("ours", course.nbgrader_command("autograde", ASSIGNMENT, f"--CourseDirectory.root={ours_root}",
                                                                "--CourseDirectory.release_directory=release"),
                                str(REPO), len(students) * per_student), workdir / "ours.log")
        ours_scores = course.gradebook_scores(f"sqlite:///{ours_root / 'gradebook.db'}")
        sampled = {s.name for s in sample}
        extras = [s for s in prediction_misses(students, ours_scores) if s.name not in sampled][: max(0, args.adjudicate)] \
            if args.stock_students else []
        if sample or extras:
            sample = sorted(sample + extras, key=lambda s: s.name)
            make_course(base, stock_root, sample)
            write_stock_config(stock_root)
        stock = None
        if sample:
            say(f"\n3/4 stock: nbgrader autograde with nbgrader's default preprocessors (Execute), {len(sample)} students"
                + (f" (the sample, plus {', '.join(s.name for s in extras)}: our score differs from the catalogue's "
                   "prediction, stock settles it)" if extras else ""))
            stock = run_nbgrader(Run("stock", course.nbgrader_command("autograde", ASSIGNMENT, f"--CourseDirectory.root={stock_root}",
                                                                      "--CourseDirectory.release_directory=release"),
                                     str(stock_root), len(sample) * per_student), workdir / "stock.log")
        else:
            say("\n3/4 stock: skipped (--stock-students 0)")

        say("\n4/4 reading both gradebooks")
        stock_scores = course.gradebook_scores(f"sqlite:///{stock_root / 'gradebook.db'}") if sample else {}
        result = compare(students, sample, ours_scores, stock_scores, layout)

        # Did each side really run the way it claims?
        ours_numbered, ours_total = executed_by_kernel(ours_root)
        stock_numbered, stock_total = executed_by_kernel(stock_root) if sample else (0, 0)
        sanity = []
        if ours.returncode != 0:
            sanity.append(f"ours: nbgrader exited with {ours.returncode}")
        if ours.trusted_lines != ours.notebooks:
            sanity.append(f"ours: {ours.trusted_lines} 'trusted grading' log lines for {ours.notebooks} notebooks")
        if ours_numbered:
            sanity.append(f"ours: {ours_numbered} autograded notebooks carry kernel execution counts")
        if stock is not None:
            if stock.trusted_lines:
                sanity.append(f"stock: {stock.trusted_lines} 'trusted grading' log lines: TrustedExecute ran")
            if stock_total == 0 or stock_numbered < stock_total:
                sanity.append(f"stock: only {stock_numbered}/{stock_total} autograded notebooks were executed by a kernel")
        failures = sanity + (["honest submissions scored differently by ours and stock"] if result["honest_disagreements"] else []) \
            + (["our scores differ from the catalogue's predictions and stock did not grade them (see --adjudicate)"]
               if any(m["verdict"].endswith("unresolved") for m in result["prediction_misses"]) else []) \
            + (["students missing from our gradebook"] if result["missing_from_our_gradebook"] else [])

        ratio = ours.per_second / stock.per_second if stock and stock.per_second else None
        say("\n" + "=" * 100)
        say("RESULT")
        say(f"  machine:   {cores} cores ({platform.processor() or platform.machine()}), {platform.platform()}")
        say(f"  command:   {command_line}")
        say(f"  ours:      {ours.notebooks} notebooks ({len(students)} students) in {ours.wall_seconds:.1f} s = "
            f"{ours.per_second:.2f} notebooks/s  (first notebook recorded at {ours.first_notebook_at:.1f} s; "
            f"{ours.steady_per_second:.2f} notebooks/s after it)")
        if stock:
            say(f"  stock:     {stock.notebooks} notebooks ({len(sample)} students) in {stock.wall_seconds:.1f} s = "
                f"{stock.per_second:.2f} notebooks/s  ({stock.wall_seconds / stock.notebooks:.2f} s per notebook)")
            say(f"  ratio:     ours / stock = {ratio:.1f}x notebooks per second (goal: >= 10x)")
            if ours.cpu_seconds and stock.cpu_seconds:
                say(f"  CPU:       {ours.cpu_seconds / ours.notebooks:.2f} s per notebook for ours (all processes, on "
                    f"{cores} cores), {stock.cpu_seconds / stock.notebooks:.2f} s for stock (one core): ours needs "
                    f"{stock.cpu_seconds / stock.notebooks / (ours.cpu_seconds / ours.notebooks):.1f}x less CPU per notebook")
                say(f"             ours: {ours.nbgrader_process_cpu / ours.notebooks:.2f} s in nbgrader's process (nbgrader, "
                    f"and judging in its threads), {(ours.cpu_seconds - ours.nbgrader_process_cpu) / ours.notebooks:.2f} s in "
                    f"the sandboxed workers; stock: {stock.nbgrader_process_cpu / stock.notebooks:.2f} s in nbgrader's "
                    f"process, {(stock.cpu_seconds - stock.nbgrader_process_cpu) / stock.notebooks:.2f} s in kernels")
            if stock.failed_students:
                say(f"  stock:     nbgrader reported errors for (and removed the autograded notebooks of): "
                    f"{', '.join(stock.failed_students)}; its exit code was {stock.returncode}")
            say(f"  check:     stock ran Execute: {stock_numbered}/{stock_total} autograded notebooks carry kernel "
                f"execution counts, {stock.trusted_lines} TrustedExecute log lines; ours: {ours.trusted_lines} "
                f"TrustedExecute log lines, {ours_numbered} with execution counts")
        say(f"  load:      ours: {load_note(ours)}" + (f"; stock: {load_note(stock)}" if stock else ""))
        busy = [r for r in (ours, stock) if r and r.other_cpu_seconds > 0.1 * r.wall_seconds * cores]
        if busy:
            say("             (other processes used more than 10% of the machine during "
                + " and ".join(r.label for r in busy) + ": the timings are pessimistic; rerun on a quiet machine)")
        say(f"  agreement: {result['honest_agreed']}/{result['honest_compared']} honest student x exercise scores "
            f"identical in both gradebooks")
        if result["honest_disagreements"]:
            say("  DISAGREEMENTS on honest submissions (failure):")
            say(table(result["honest_disagreements"], ["student", "exercise", "submitted", "ours", "stock"]))
        say(f"  adversarial (expected to differ; trusted grading is the point): "
            f"{len(result['adversarial_differences'])} exercise scores differ, {len(result['adversarial_same'])} agree")
        if result["adversarial_differences"]:
            say(table(result["adversarial_differences"], ["student", "exercise", "submitted", "ours", "stock"]))
        say(f"  catalogue: {result['prediction_checked'] - len(result['prediction_misses'])}/{result['prediction_checked']} "
            f"of our honest exercise scores (whole class) equal the `# expect:` predictions")
        if result["prediction_misses"]:
            say(table(result["prediction_misses"], ["student", "exercise", "submitted", "ours", "stock", "predicted",
                                                     "verdict"]))
        for problem in sanity:
            say(f"  PROBLEM: {problem}")
        say(f"  verdict:   {'FAIL: ' + '; '.join(failures) if failures else 'OK'}")
        say("=" * 100)

        report = {
            "command": command_line, "machine": {"node": platform.node(), "cores": cores, "platform": platform.platform(),
                                                 "python": platform.python_version()},
            "seed": args.seed, "students": len(students), "notebooks_per_student": per_student,
            "class": kinds, "stock_students": [s.name for s in sample], "stock_added_to_settle_predictions":
            [s.name for s in extras],
            "ours": asdict(ours) | {"notebooks_per_second": ours.per_second, "steady_notebooks_per_second": ours.steady_per_second,
                                    "other_cpu_seconds": ours.other_cpu_seconds},
            "stock": (asdict(stock) | {"notebooks_per_second": stock.per_second, "other_cpu_seconds": stock.other_cpu_seconds})
            if stock else None,
            "ratio": ratio, **result, "sanity_problems": sanity, "failures": failures, "ok": not failures,
            "submissions": {s.name: {"kind": s.kind, "plan": s.plan} for s in students},
            "workdir": str(workdir) if args.keep else None,
        }
        if args.json:
            args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
            say(f"JSON: {args.json}")
        return 1 if failures else 0
    finally:
        if args.keep:
            say(f"Courses kept in {workdir} (ours/, stock/, ours.log, stock.log)")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
