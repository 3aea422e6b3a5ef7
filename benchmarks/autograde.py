#!/usr/bin/env python
"""Throughput and agreement: stock nbgrader versus `make autograde` in several setups, as one table.

    .venv/bin/python benchmarks/autograde.py                            # classes of 1, 24 and 300 students
    .venv/bin/python benchmarks/autograde.py --sizes 1,24 --stock-students 4 --seed 7 --json result.json

1. Builds one synthetic class per size, deterministic from --seed: correct students (instructor answers and the
   correct alternatives of examples/alternatives), students with typical mistakes (examples/mistakes, plus a
   few made-up ones for notebook 1, which the catalogue does not cover), blank students and a few adversarial
   ones (see ADVERSARIAL; --infinite-loop adds one that never ends).
2. Times `make autograde` (python -m grader.classroom.course autograde) on each class: on 1 sandboxed worker, on all
   cores, with JOBS=2 on a PostgreSQL gradebook (grader.classroom.postgres starts one), and through a loopback Dask
   cluster (when grader.isolation.cluster exists); and stock nbgrader (nbgrader's default preprocessors, i.e.
   nbgrader.preprocessors.Execute) on the 1-student class and on a sample of the largest class: stock's
   start-up and cost per notebook are fitted on those two runs for the other sizes (marked ~).
3. Compares the gradebooks per student x exercise: every setup of ours must agree with the others; honest
   submissions must get the same score from ours and stock (exit code 1 otherwise); differences on adversarial
   notebooks are printed, labelled, and are expected. Our scores on honest submissions are also compared with
   what the catalogue's `# expect:` lines predict.
4. Prints one table (notebooks per second, wall time and ratio to stock, per setup and class size), the CPU per
   notebook, and the CPU other processes took meanwhile (a shared machine slows ours, which uses every core,
   most); --json.
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
import signal
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

from grader.classroom import course  # noqa: E402
from grader.judge.runner import exercise_of  # noqa: E402

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


# Adversarial kinds that kill stock's kernel: stock then drops the rest of that student's assignment.
KERNEL_KILLERS = ("adversarial:os-exit", "adversarial:infinite-loop")

# Exercises whose checks run through another exercise's answer (grader.secondorder builds hvp's and the gradient
# penalty's probe functions from the student's own Softplus): their catalogue prediction holds only when that
# answer is right. (The benchmark leaves section 0 of notebook 4, the pasted notebook-3 Functions, as released.)
PREDICTION_NEEDS = {"hvp": ("softplus",), "penalty": ("softplus",)}


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
            elif choice == "mistake" and MADE_UP_MISTAKES.get(exercise):
                name = rng.choice(sorted(MADE_UP_MISTAKES[exercise]))
                s.answers[exercise] = MADE_UP_MISTAKES[exercise][name]
                s.plan[exercise] = f"made-up mistake {exercise}:{name}"
                s.expected[exercise] = None
            else:
                s.plan[exercise] = "stub (left blank)"
                s.expected[exercise] = 0.0
        for exercise, needs in PREDICTION_NEEDS.items():
            if s.expected.get(exercise) and any(not s.plan.get(n, "").startswith(("solution", "alternative"))
                                                for n in needs):
                s.expected[exercise] = None  # unpredicted: the check goes through a wrong or missing answer
                s.plan[exercise] += f" (through {', '.join(needs)}: {', '.join(s.plan.get(n, '') for n in needs)})"
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
    env: dict[str, str] = field(default_factory=dict)  # added to the environment
    wall_seconds: float = 0.0
    returncode: int = 0
    trusted_lines: int = 0  # "trusted grading" log lines (one per notebook graded by TrustedExecute)
    failed_students: list[str] = field(default_factory=list)  # nbgrader: "error processing assignment ... for student"
    cpu_seconds: float = 0.0  # CPU time of the command and everything it started (reaped children)
    machine_busy_seconds: float = 0.0  # CPU time the whole machine spent busy meanwhile (/proc/stat)
    load_average: list[float] = field(default_factory=list)  # 1-minute load average sampled during the run
    log: str = ""

    @property
    def other_cpu_seconds(self) -> float:
        """CPU time used by processes outside this run (other users, other jobs): it slows the run down."""
        return max(0.0, self.machine_busy_seconds - self.cpu_seconds)

    @property
    def per_second(self) -> float:
        return self.notebooks / self.wall_seconds if self.wall_seconds else 0.0


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
    """Every half second: the load average, and the CPU time of the run's process tree (sandboxes included)."""
    last_load = 0.0
    while not stop.wait(0.5):
        total, _ = tree_cpu(pid)
        seen.append(total)
        if time.monotonic() - last_load >= 2.0:
            last_load = time.monotonic()
            run.load_average.append(os.getloadavg()[0])


def run_command(run: Run, log_path: Path) -> Run:
    """Run ``run.command``, its output to ``log_path`` (progress and errors echoed), timing it whole."""
    say(f"[{run.label}] $ (cd {run.cwd} && {' '.join(f'{k}=...' for k in run.env)}{' ' if run.env else ''}"
        f"{shlex.join(run.command)})")
    busy0, cpu0 = machine_busy(), children_cpu()
    stop, seen = threading.Event(), [0.0]
    started = time.monotonic()
    with open(log_path, "w", encoding="utf-8") as log:
        process = subprocess.Popen(run.command, cwd=run.cwd, env={**course.nbgrader_env(), **run.env},
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, bufsize=1)
        sampler = threading.Thread(target=sample, args=(run, process.pid, stop, seen), daemon=True)
        sampler.start()
        assert process.stdout is not None
        for line in process.stdout:
            log.write(line)
            now = time.monotonic() - started
            if "There was an error processing assignment '" in line:
                run.failed_students.append(line.rstrip().rsplit("'", 2)[-2])
            if re.search(r"notebooks graded \(|\| ERROR\]|Traceback|^\s*error:", line):
                say(f"[{run.label}] {now:6.1f} s  {line.strip()[:200]}")
        run.returncode = process.wait()
    run.wall_seconds = time.monotonic() - started
    stop.set()
    sampler.join()
    # Sandboxed workers are not always reaped up the chain: take the larger of rusage and the sampled tree.
    run.cpu_seconds, run.machine_busy_seconds = max(children_cpu() - cpu0, max(seen)), machine_busy() - busy0
    run.log = str(log_path)
    say(f"[{run.label}] done in {run.wall_seconds:.1f} s (exit code {run.returncode}), "
        f"{run.per_second:.2f} notebooks/s; CPU {run.cpu_seconds:.0f} s; {load_note(run)}")
    return run


def nbgrader_cpu(root: Path) -> float:
    """CPU seconds used by the course's nbgrader processes themselves (their threads, judging included), as
    grader.classroom.nbgrader_job logs them: the rest of a run's CPU is the sandboxed workers' (and make autograde's own)."""
    total = 0.0
    for path in [root / course.LOG_NAME, *root.glob("nbgrader-job*.log")]:
        if path.is_file():
            total += sum(float(x) for x in re.findall(r"having used ([\d.]+) s of CPU", path.read_text(errors="replace")))
    return total


def count_trusted(root: Path) -> int:
    """'trusted grading' lines in the course's nbgrader logs: one per notebook TrustedExecute graded."""
    return sum(path.read_text(encoding="utf-8", errors="replace").count("(trusted grading")
               for path in [root / course.LOG_NAME, *root.glob("nbgrader-job*.log")] if path.is_file())


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
            if s.kind in KERNEL_KILLERS and s.adversarial_notebook and notebook > s.adversarial_notebook:
                # Stock nbgrader removes the whole assignment of a student whose kernel died ("Removing failed
                # assignment"): the notebooks after the attack are lost to stock, not judged. Ours grades them.
                row["submitted"] += f" (stock: lost with the kernel of {s.adversarial_notebook})"
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


@dataclass
class Setup:
    """One row of the table: how the class is autograded."""

    key: str
    label: str
    skipped: str = ""  # why this row cannot run here ("" when it can)
    env: dict[str, str] = field(default_factory=dict)


def start_postgres(workdir: Path) -> tuple[Any, str]:
    """(the server, "") or (None, why not): a local PostgreSQL for the JOBS rows (grader.classroom.postgres)."""
    from grader.classroom import postgres

    try:
        postgres.binaries()
        postgres.server_user()
        os.chmod(workdir, 0o755)  # the server's user must reach its folder
        server = postgres.LocalPostgres(workdir / "postgres")
        server.start()
        return server, ""
    except (postgres.Unavailable, OSError) as why:
        return None, f"no PostgreSQL here ({why})"


def dask_missing() -> str:
    """Why the Dask rows cannot run here ("" when they can)."""
    import importlib.util

    if importlib.util.find_spec("grader.isolation.cluster") is None:
        return "no grader.isolation.cluster"
    if not Path(sys.executable).with_name("dask").exists():
        return "no dask command (distributed not installed)"
    return ""


def start_dask(workdir: Path, workers: int) -> tuple[list[subprocess.Popen], str, str]:
    """(processes, scheduler address, "") or ([], "", why not): a loopback Dask cluster, `dask scheduler` and
    `dask worker` on 127.0.0.1, for grader.isolation.cluster (TrustedExecute.scheduler / GRADER_SCHEDULER), once its
    ``workers`` have joined the scheduler (a long-lived cluster's state when a class is handed to it)."""
    why = dask_missing()
    if why:
        return [], "", why
    from grader.isolation import cluster

    dask = Path(sys.executable).with_name("dask")
    workdir.mkdir(parents=True, exist_ok=True)
    tls = cluster.make_certificates(workdir / "tls", force=True)  # the cluster is TLS-only (GRADER_CLUSTER_TLS)
    scheduler_file = workdir / "dask-scheduler.json"
    logs = open(workdir / "dask.log", "w", encoding="utf-8")
    processes = [subprocess.Popen([str(dask), "scheduler", "--protocol", "tls", "--host", "127.0.0.1", "--port", "0",
                                   "--no-dashboard", "--scheduler-file", str(scheduler_file),
                                   *cluster.tls_arguments(tls, "scheduler")], stdout=logs, stderr=subprocess.STDOUT,
                                  env=course.nbgrader_env(), cwd=str(REPO))]
    deadline = time.monotonic() + 60
    while not scheduler_file.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    if not scheduler_file.exists():
        stop_all(processes)
        return [], "", f"dask scheduler did not start (see {workdir / 'dask.log'})"
    address = json.loads(scheduler_file.read_text())["address"]
    processes.append(subprocess.Popen([str(dask), "worker", address, "--nworkers", str(workers), "--nthreads", "1",
                                       "--no-dashboard", *cluster.tls_arguments(tls, "worker")], stdout=logs,
                                      stderr=subprocess.STDOUT, env=course.nbgrader_env(), cwd=str(REPO)))
    from distributed import Client

    try:
        with Client(address, timeout=60, security=cluster.cluster_security(tls, "client")) as client:
            client.wait_for_workers(workers, timeout=120)
    except Exception as exc:  # (OSError, TimeoutError): said, and the row is not run
        stop_all(processes)
        return [], "", f"the Dask workers did not join the scheduler ({type(exc).__name__}: {exc}; see {workdir / 'dask.log'})"
    return processes, address, ""


def stop_all(processes: list[subprocess.Popen]) -> None:
    for process in reversed(processes):
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def cell(run: Run | None, stock_rate: float | None, estimated: bool = False, why: str = "") -> str:
    """'3.41/s  21.1 s  14.6x' (notebooks per second, wall time, ratio to stock) for one row and class size."""
    if run is None:
        return why or "-"
    mark = "~" if estimated else ""
    ratio = f"{run.per_second / stock_rate:.1f}x" if stock_rate else "-"
    return f"{(mark + f'{run.per_second:.2f}/s').rjust(7)} {(mark + f'{run.wall_seconds:.1f} s').rjust(9)} {ratio.rjust(6)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1,24,300", help="class sizes, in students (default 1,24,300)")
    parser.add_argument("--stock-students", type=int, default=8,
                        help="students of the largest class graded by stock nbgrader too (a deterministic sample); "
                             "stock's cost per notebook is fitted on it and on the 1-student class (0: skip stock)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic classes and of the sample")
    parser.add_argument("--adjudicate", type=int, default=3, metavar="N",
                        help="add to stock's sample up to N more students whose score (ours) differs from the "
                             "catalogue's prediction, so that stock settles who is right (default 3)")
    parser.add_argument("--jobs", type=int, default=2, help="nbgrader processes of the JOBS row (0: no such row)")
    parser.add_argument("--one-worker-max", type=int, default=24, metavar="N",
                        help="the 1-worker row only on classes of at most N students (default 24: on 300 it would "
                             "take as long as the rest of the benchmark, at the throughput it has at 24)")
    parser.add_argument("--infinite-loop", action="store_true",
                        help="add an adversarial student whose notebook never ends (costs the timeout in both)")
    parser.add_argument("--json", type=Path, help="write the results as JSON to this path")
    parser.add_argument("--workdir", type=Path, help="where to build the courses (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the course directories (logs, gradebooks)")
    args = parser.parse_args(argv)
    # Stopped with SIGTERM (kill, a CI timeout): unwind as for Ctrl-C, so that the PostgreSQL server and the Dask
    # cluster this run started are stopped by the finally below, not left running.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    sizes = sorted({int(x) for x in args.sizes.split(",") if x.strip()})
    if not sizes or sizes[0] < 1 or not 0 <= args.stock_students <= sizes[-1]:
        parser.error("need sizes >= 1 and 0 <= --stock-students <= the largest size")

    from nbgrader.converters import Autograde

    default = [c.__name__ for c in Autograde.class_traits()["autograde_preprocessors"].default()]
    if default != [p.rsplit(".", 1)[1] for p in STOCK_PREPROCESSORS]:
        say(f"warning: nbgrader's default autograde preprocessors are {default}; the benchmark uses {STOCK_PREPROCESSORS}")

    began = time.monotonic()
    command_line = shlex.join([sys.executable, *sys.argv]) if argv is None else shlex.join(argv)
    cores = os.cpu_count() or 1
    layout = read_layout()
    per_student = len(layout.notebooks)
    classes = {n: build_class(n, args.seed, layout, args.infinite_loop) for n in sizes}
    largest = sizes[-1]
    students = classes[largest]
    sample = stock_sample(students, args.stock_students, args.seed)

    say("Autograde benchmark: stock nbgrader (Execute) vs make autograde (trusted, parallel), one table")
    say(f"  machine:  {platform.node()}, {cores} cores, {platform.platform()}, Python {platform.python_version()}")
    say(f"  command:  {command_line}")
    for n in sizes:
        kinds: dict[str, int] = {}
        for s in classes[n]:
            kinds[s.kind] = kinds.get(s.kind, 0) + 1
        say(f"  class {n}: {n} students x {per_student} notebooks = {n * per_student} notebooks, seed {args.seed}: "
            + ", ".join(f"{v} {k}" for k, v in sorted(kinds.items())))

    workdir = (args.workdir.resolve() if args.workdir else Path(tempfile.mkdtemp(prefix="autograde-bench-")))
    if args.workdir:
        if workdir.exists():
            shutil.rmtree(workdir)
        workdir.mkdir(parents=True)
    server, dask_processes = None, []
    try:
        setups = [Setup("stock", "stock nbgrader (Execute, one kernel at a time)"),
                  Setup("one", "make autograde, 1 worker"),
                  Setup("all", f"make autograde, {cores} workers (all cores)")]
        if args.jobs > 1:
            server, why = start_postgres(workdir)
            setups.append(Setup("jobs", f"make autograde JOBS={args.jobs} (PostgreSQL)", why))
        # the loopback cluster runs only during the Dask rows: idle, its three processes (heartbeats, the workers'
        # statistical profilers) took 15-20 % of a 2-core machine from every other row
        setups.append(Setup("dask", f"make autograde, Dask loopback cluster ({cores} workers)", dask_missing()))
        for setup in setups:
            if setup.skipped:
                say(f"  {setup.label}: skipped: {setup.skipped}")

        say(f"\n1/3 building the courses in {workdir}")
        t0 = time.monotonic()
        base = make_base(workdir)
        say(f"    generated the assignment in {time.monotonic() - t0:.1f} s")

        say("\n2/3 make autograde (python -m grader.classroom.course autograde) on each class, each setup")
        runs: dict[tuple[str, int], Run] = {}
        scores: dict[tuple[str, int], dict] = {}
        roots: dict[tuple[str, int], Path] = {}
        for n in sizes:
            for setup in setups:
                if setup.key == "stock" or setup.skipped or (setup.key == "one" and n > args.one_worker_max):
                    continue
                root = workdir / f"{setup.key}-{n}"
                make_course(base, root, classes[n])
                command = [sys.executable, "-m", "grader.classroom.course", "autograde", "--root", str(root)]
                env = dict(setup.env)
                db_url = f"sqlite:///{root / 'gradebook.db'}"
                if setup.key == "one":
                    command += ["--workers", "1"]
                if setup.key == "dask":
                    dask_processes, address, why = start_dask(workdir / f"{setup.key}-{n}-cluster", cores)
                    if not address:
                        raise SystemExit(f"the Dask loopback cluster did not start: {why}")
                    env["GRADER_SCHEDULER"] = address
                    env["GRADER_CLUSTER_TLS"] = str(workdir / f"{setup.key}-{n}-cluster" / "tls")
                if setup.key == "jobs":
                    from grader.classroom import postgres

                    db_url = postgres.LocalPostgres(server.folder, database=f"gradebook_{n}").start()
                    (root / "gradebook.db").unlink()
                    course.ensure_gradebook(course.Nbgrader(root, workdir / f"{setup.key}-{n}-setup.log", db_url))
                    command += ["--jobs", str(args.jobs)]
                    env["GRADER_DB_URL"] = db_url
                try:
                    run = run_command(Run(f"{setup.key} {n}", command, str(REPO), n * per_student, env),
                                      workdir / f"{setup.key}-{n}.log")
                finally:
                    stop_all(dask_processes)
                    dask_processes = []
                runs[(setup.key, n)], roots[(setup.key, n)] = run, root
                scores[(setup.key, n)] = course.gradebook_scores(db_url)

        say("\n3/3 stock nbgrader: the 1-student class, and a sample of the largest class")
        stock_runs: dict[str, Run] = {}
        stock_scores: dict[str, dict] = {}
        extras: list[Student] = []
        if args.stock_students:
            ours_largest = scores.get(("all", largest), {})
            sampled = {s.name for s in sample}
            extras = [s for s in prediction_misses(students, ours_largest) if s.name not in sampled][:max(0, args.adjudicate)]
            sample = sorted(sample + extras, key=lambda s: s.name)
            groups = {"sample": sample} | ({"one": classes[1]} if 1 in sizes and largest > 1 else {})
            for name, group in groups.items():
                root = workdir / f"stock-{name}"
                make_course(base, root, group)
                write_stock_config(root)
                run = run_command(Run(f"stock {name}", course.nbgrader_command(
                    "autograde", ASSIGNMENT, f"--CourseDirectory.root={root}", "--CourseDirectory.release_directory=release"),
                    str(root), len(group) * per_student), workdir / f"stock-{name}.log")
                stock_runs[name], roots[("stock", 0 if name == "sample" else 1)] = run, root
                stock_scores[name] = course.gradebook_scores(f"sqlite:///{root / 'gradebook.db'}")

        # stock's cost: wall = start-up + notebooks x per-notebook cost, fitted on its real runs (strictly serial)
        fit = None
        if "sample" in stock_runs:
            big = stock_runs["sample"]
            small = stock_runs.get("one")
            if small and big.notebooks > small.notebooks:
                per_notebook = (big.wall_seconds - small.wall_seconds) / (big.notebooks - small.notebooks)
                fit = (max(0.0, small.wall_seconds - small.notebooks * per_notebook), per_notebook)
            else:
                fit = (0.0, big.wall_seconds / big.notebooks)
        stock_cells: dict[int, tuple[Run, bool]] = {}
        for n in sizes:
            if n == 1 and "one" in stock_runs:
                stock_cells[n] = (stock_runs["one"], False)
            elif n == largest and "sample" in stock_runs and len(sample) == n:
                stock_cells[n] = (stock_runs["sample"], False)
            elif fit:
                estimate = Run("stock (fitted)", [], "", n * per_student)
                estimate.wall_seconds = fit[0] + n * per_student * fit[1]
                stock_cells[n] = (estimate, True)

        # Did each side really run the way it claims? Do all of ours agree?
        sanity = []
        for (key, n), run in runs.items():
            if run.returncode != 0:
                sanity.append(f"{key} {n}: make autograde exited with {run.returncode}")
            trusted = count_trusted(roots[(key, n)])
            if trusted != run.notebooks:
                sanity.append(f"{key} {n}: {trusted} 'trusted grading' log lines for {run.notebooks} notebooks")
            numbered, _ = executed_by_kernel(roots[(key, n)])
            if numbered:
                sanity.append(f"{key} {n}: {numbered} autograded notebooks carry kernel execution counts")
        for name, run in stock_runs.items():
            root = roots[("stock", 0 if name == "sample" else 1)]
            numbered, total = executed_by_kernel(root)
            if count_trusted(root) or total == 0 or numbered < total:
                sanity.append(f"stock {name}: {numbered}/{total} autograded notebooks executed by a kernel, "
                              f"{count_trusted(root)} TrustedExecute lines")
        inconsistent = [f"{key} at {n} students" for (key, n), table_ in scores.items()
                        if key != "all" and ("all", n) in scores and table_ != scores[("all", n)]]
        result = compare(students, sample, scores.get(("all", largest), {}), stock_scores.get("sample", {}), layout)
        one_student = None
        if "one" in stock_runs and ("all", 1) in scores:
            one_student = compare(classes[1], classes[1], scores[("all", 1)], stock_scores["one"], layout)
        failures = sanity + (["honest submissions scored differently by ours and stock"]
                             if result["honest_disagreements"] or (one_student and one_student["honest_disagreements"])
                             else []) \
            + ([f"our setups disagree with each other: {', '.join(inconsistent)}"] if inconsistent else []) \
            + (["our scores differ from the catalogue's predictions and stock did not grade them (see --adjudicate)"]
               if any(m["verdict"].endswith("unresolved") for m in result["prediction_misses"]) else []) \
            + (["students missing from our gradebook"] if result["missing_from_our_gradebook"] else [])

        say("\n" + "=" * 118)
        say("RESULT: notebooks per second over the whole command's wall time (start-up included), and the ratio to stock")
        say(f"  machine: {cores} cores ({platform.processor() or platform.machine()}), {platform.platform()}; "
            f"command: {command_line}")
        header = ["setup", *(f"{n} student{'s' if n > 1 else ''} ({n * per_student} notebooks)" for n in sizes)]
        rows = [header]
        for setup in setups:
            row = [setup.label]
            for n in sizes:
                stock_entry = stock_cells.get(n)
                stock_rate = stock_entry[0].per_second if stock_entry else None
                if setup.key == "stock":
                    row.append(cell(stock_entry[0], stock_rate, stock_entry[1]) if stock_entry else "not run")
                elif setup.key == "one" and n > args.one_worker_max:
                    row.append(f"not run (--one-worker-max {args.one_worker_max})")
                else:
                    row.append(cell(runs.get((setup.key, n)), stock_rate, why=f"skipped: {setup.skipped}"))
            rows.append(row)
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        for r in rows:
            say("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)))
        if fit:
            say(f"  ~ stock at the sizes it did not grade whole: {fit[0]:.1f} s of start-up + {fit[1]:.2f} s per notebook,"
                f" fitted on its real runs: {', '.join(f'{r.notebooks} notebooks in {r.wall_seconds:.1f} s' for r in stock_runs.values())}"
                f" (the sample: {len(sample)} students of the {largest}-student class)")
        say("  CPU per notebook (all processes, the cores of the machine): "
            + "; ".join(f"{key} {n}: {run.cpu_seconds / run.notebooks:.2f} s" for (key, n), run in runs.items())
            + "".join(f"; stock {name}: {r.cpu_seconds / r.notebooks:.2f} s" for name, r in stock_runs.items()))
        split = {}
        for key in ("all", "jobs", "one"):
            top = max((n for (k, n) in runs if k == key), default=0)
            if top > sizes[0] and (key, sizes[0]) in runs:
                big, small = runs[(key, top)], runs[(key, sizes[0])]
                own = nbgrader_cpu(roots[(key, top)]) - nbgrader_cpu(roots[(key, sizes[0])])
                total = big.cpu_seconds - small.cpu_seconds
                notebooks = big.notebooks - small.notebooks
                split[key] = (own / notebooks, (total - own) / notebooks)
        if split:
            say("  CPU per notebook past start-up (the largest class a setup graded minus the smallest): "
                + "; ".join(f"{key}: {own:.3f} s in nbgrader's process(es) (recording and judging, one notebook at a "
                            f"time per process), {rest:.3f} s in the sandboxed workers" for key, (own, rest) in split.items()))
        say("  load: CPU other processes took during each run, as a share of the machine: "
            + "; ".join(f"{r.label}: {r.other_cpu_seconds / (r.wall_seconds * cores):.0%}"
                        for r in [*runs.values(), *stock_runs.values()] if r.wall_seconds))
        busy = [r.label for r in [*runs.values(), *stock_runs.values()]
                if r.wall_seconds and r.other_cpu_seconds > 0.1 * r.wall_seconds * cores]
        if busy:
            say(f"        (others used more than 10% of the machine during {', '.join(busy)}: those timings are pessimistic)")
        say(f"  agreement: {result['honest_agreed']}/{result['honest_compared']} honest student x exercise scores "
            f"identical in ours (all cores, {largest} students) and stock (the sample)"
            + (f"; {one_student['honest_agreed']}/{one_student['honest_compared']} for the 1-student class" if one_student else ""))
        say(f"  consistency: every setup of ours gives {'the same' if not inconsistent else 'DIFFERENT'} gradebook "
            f"scores at each class size ({len(scores)} runs)")
        for disagreements in [result["honest_disagreements"], *([one_student["honest_disagreements"]] if one_student else [])]:
            if disagreements:
                say("  DISAGREEMENTS on honest submissions (failure):")
                say(table(disagreements, ["student", "exercise", "submitted", "ours", "stock"]))
        say(f"  adversarial (expected to differ; trusted grading is the point): "
            f"{len(result['adversarial_differences'])} exercise scores differ, {len(result['adversarial_same'])} agree")
        if result["adversarial_differences"]:
            say(table(result["adversarial_differences"], ["student", "exercise", "submitted", "ours", "stock"]))
        say(f"  catalogue: {result['prediction_checked'] - len(result['prediction_misses'])}/{result['prediction_checked']} "
            f"of our honest exercise scores ({largest} students) equal the `# expect:` predictions")
        if result["prediction_misses"]:
            say(table(result["prediction_misses"], ["student", "exercise", "submitted", "ours", "stock", "predicted",
                                                     "verdict"]))
        for problem in sanity:
            say(f"  PROBLEM: {problem}")
        say(f"  verdict:   {'FAIL: ' + '; '.join(failures) if failures else 'OK'}   (whole benchmark: "
            f"{time.monotonic() - began:.0f} s)")
        say("=" * 118)

        report = {
            "command": command_line, "machine": {"node": platform.node(), "cores": cores, "platform": platform.platform(),
                                                 "python": platform.python_version()},
            "seed": args.seed, "sizes": sizes, "notebooks_per_student": per_student,
            "setups": [asdict(s) for s in setups],
            "runs": {f"{key} {n}": asdict(run) | {"notebooks_per_second": run.per_second,
                                                  "other_cpu_seconds": run.other_cpu_seconds}
                     for (key, n), run in runs.items()},
            "stock": {name: asdict(run) | {"notebooks_per_second": run.per_second} for name, run in stock_runs.items()},
            "stock_fit": {"startup_seconds": fit[0], "seconds_per_notebook": fit[1]} if fit else None,
            "cpu_per_notebook_past_startup": {k: {"nbgrader_processes": v[0], "sandboxed_workers": v[1]}
                                              for k, v in split.items()},
            "stock_students": [s.name for s in sample], "stock_added_to_settle_predictions": [s.name for s in extras],
            **result, "sanity_problems": sanity, "inconsistent": inconsistent, "failures": failures, "ok": not failures,
            "seconds": time.monotonic() - began,
            "submissions": {s.name: {"kind": s.kind, "plan": s.plan} for s in students},
            "workdir": str(workdir) if args.keep else None,
        }
        if args.json:
            args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
            say(f"JSON: {args.json}")
        return 1 if failures else 0
    finally:
        stop_all(dask_processes)
        if server is not None:
            server.stop()
        if args.keep:
            say(f"Courses kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
