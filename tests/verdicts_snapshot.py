"""The verdicts of the demo class and of the whole adversarial corpus, normalised into one JSON file, so that a
change that must not change verdicts (issue 22: the grader reshaped into layers) can be checked before and after:

    .venv/bin/python tests/verdicts_snapshot.py OUT.json                  grade everything, write OUT.json
    .venv/bin/python tests/verdicts_snapshot.py OUT.json --classes main   only those adversarial classes (no demo)
    .venv/bin/python tests/verdicts_snapshot.py --compare A.json B.json   print what differs (exit status 1 if any)

from the repository root, as root (the sandbox's bubblewrap pool grades, as in a real class). Nothing in the
repository is written: the demo class is built and autograded by `python -m grader.classroom.course demo --dir <temp>` (what
`make demo` runs, in a temporary course instead of .demo/), and each class of tests/adversarial/ (and the
`controls` of examples/alternatives/) by test_adversarial's own `grade_class`, with the same nbgrader options.

What is kept, per course ("demo", "adversarial/<class>"), student and notebook:
- the gradebook: each graded cell's score and max score (nbgrader's Grade), and the per-exercise table
  (`gradebook_scores`, what `make scores` prints);
- grader_results/<assignment>/<student>/<notebook>.json whole (verdicts, findings with mistake keys and texts,
  flags, restored, problem), without `seconds`;
- the outputs of the graded test cells in autograded/ (the verdict lines nbgrader scored);
- nbgrader's WARNING/ERROR log lines naming the student (sorted; the checksum warnings of hidden tests left out).
Timestamps, durations, absolute temporary paths, pids and the grader's fingerprint are replaced by placeholders
(`normalise`). Keys are sorted, so two runs on one commit give the same bytes.

Not covered: the `# after:` checks of the corpus (processes left, files touched: not verdicts), the attacks that
tests/test_sandbox_attacks.py runs directly in a pool of one worker, and the corpus graded through Dask
(tests/test_cluster.py): the same verdicts are expected there, and those tests assert them.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))

for _name in ("GRADER_DB_URL", "GRADER_JOBS", "GRADER_SCHEDULER"):  # the snapshot's own gradebooks, this machine
    os.environ.pop(_name, None)
os.environ.setdefault("GRADER_PROBE_DRAW", "1234567")  # the probe drawn for each run, the same in every snapshot

SLOWDOWN = 3.0  # a class is killed past 3x the sum of its students' bounds (test_adversarial: 1x): the machine is shared
HARMLESS_LOG = ("Attribute 'checksum' for cell",)  # nbgrader's warning for every test cell with hidden tests


# --- normalising ----------------------------------------------------------------------------------------------


def normaliser(roots: dict[str, str]):
    """A function making a string independent of the run: each of ``roots`` (path -> placeholder) replaced, then
    other temporary paths, timestamps, durations, pids and hex fingerprints."""
    ordered = sorted(roots.items(), key=lambda item: -len(item[0]))
    patterns = [
        (re.compile(r"/tmp/[\w.+-]*?[-_][\w]{6,}(?=[/\s'\")\]:,]|$)"), "<tmp>"),  # tempfile.mkdtemp's names
        (re.compile(r"\b\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:[+-]\d\d:?\d\d|Z)?"), "<time>"),
        (re.compile(r"\b\d+\.\d+ ?(s|ms|seconds?)\b"), r"<n> \1"),  # measured (limits, integers, stay)
        (re.compile(r"\b(pids?|PIDs?|process(?:es)?)( |=|: ?)\d{2,}\b"), r"\1\2<pid>"),  # not pid1-... (a student), not pid 1
        (re.compile(r"\b[0-9a-f]{32,64}\b"), "<hex>"),  # fingerprints, checksums of the grader's sources
        (re.compile(r"\b0x[0-9a-f]{6,16}\b"), "<addr>"),  # object addresses in reprs
    ]

    def normalise(text: str) -> str:
        for path, placeholder in ordered:
            text = text.replace(path, placeholder)
        for pattern, replacement in patterns:
            text = pattern.sub(replacement, text)
        return text

    return normalise


def normalised(value: Any, normalise) -> Any:
    if isinstance(value, str):
        return normalise(value)
    if isinstance(value, dict):
        return {k: normalised(v, normalise) for k, v in value.items()}  # (keys: students, notebooks, cells)
    if isinstance(value, (list, tuple)):
        return [normalised(v, normalise) for v in value]
    return value


# Students whose verdict texts depend on the machine's load, not on the grader: only their points are compared.
# memory-bomb: its 64 MB allocations hit the sandbox's memory limit (MemoryError: "failed", cell_raised) or, on a
# busy machine, the 20 s notebook limit first ("not run", not_run): 0 points for cube either way (seen on 61376af).
RACY = {"memory-bomb": "MemoryError or the notebook time limit, whichever comes first"}


def settle(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with the texts, statuses and findings of RACY students replaced by why they vary (points kept)."""
    for klass in data.get("adversarial", {}).values():
        for student, why in RACY.items():
            entry = klass.get("students", {}).get(student)
            if not entry:
                continue
            entry["log"] = [f"<racy: {why}>"]
            for notebook in entry.get("notebooks", {}).values():
                notebook.pop("test_cell_outputs", None)
                saved = notebook.get("grader_results")
                if not saved:
                    continue
                saved["problem"] = f"<racy: {why}>"
                for exercise in saved.get("exercises", {}).values():
                    for cell in exercise.get("cells", []):
                        if cell.get("points") == 0:
                            cell.update(status="<racy>", message=f"<racy: {why}>", findings=[])
    return data


def write(data: dict[str, Any], out: Path) -> None:
    out.write_text(json.dumps(settle(data), indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


# --- reading a graded course -----------------------------------------------------------------------------------


def gradebook_cells(db_url: str, assignment: str) -> dict[str, dict[str, dict[str, list[float]]]]:
    """student -> notebook -> graded cell -> [score, max score] (nbgrader's Grade rows)."""
    from nbgrader.api import Gradebook

    table: dict[str, dict[str, dict[str, list[float]]]] = {}
    with Gradebook(db_url) as gb:
        for student in gb.students:
            try:
                submission = gb.find_submission(assignment, student.id)
            except Exception:  # MissingEntry: no submission of this student
                continue
            for notebook in submission.notebooks:
                cells = table.setdefault(student.id, {}).setdefault(notebook.name, {})
                for grade in notebook.grades:
                    cells[grade.name] = [float(grade.score or 0), float(grade.max_score or 0)]
    return table


def graded_cell_outputs(path: Path) -> dict[str, list[str]]:
    """grade_id -> the texts of a graded cell's outputs in an autograded notebook (the verdict lines)."""
    import nbformat

    found: dict[str, list[str]] = {}
    for cell in nbformat.read(str(path), as_version=4).cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if not meta.get("grade") or cell.cell_type != "code":
            continue
        texts = []
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                texts.append(f"{output.get('ename')}: {output.get('evalue')}")
            elif "text" in output:
                texts.append(output["text"])
            elif "data" in output:
                texts.append(output["data"].get("text/plain", "") if isinstance(output["data"], dict) else "")
        found[meta.get("grade_id", "?")] = texts
    return found


def read_course(root: Path, log: str, normalise, students: list[str] | None = None) -> dict[str, Any]:
    from grader.classroom import course

    assignment = course.ASSIGNMENT
    db_url = f"sqlite:///{root / 'gradebook.db'}"
    cells = gradebook_cells(db_url, assignment)
    table = course.gradebook_scores(db_url, assignment)
    names = sorted(set(students or []) | set(cells) | {p.name for p in (root / "submitted").glob("*") if p.is_dir()})
    out: dict[str, Any] = {}
    for student in names:
        notebooks: dict[str, Any] = {}
        results = root / "grader_results" / assignment / student
        autograded = root / "autograded" / student / assignment
        for name in sorted({p.stem for p in results.glob("*.json")} | {p.stem for p in autograded.glob("*.ipynb")}
                           | set(cells.get(student, {}))):
            entry: dict[str, Any] = {"gradebook": cells.get(student, {}).get(name)}
            saved = results / f"{name}.json"
            if saved.is_file():
                data = json.loads(saved.read_text(encoding="utf-8"))
                data.pop("seconds", None)
                entry["grader_results"] = data
            notebook = autograded / f"{name}.ipynb"
            if notebook.is_file():
                entry["test_cell_outputs"] = graded_cell_outputs(notebook)
            notebooks[name] = entry
        lines = sorted({re.sub(r"^\[[^\]]*\]\s*", "", line).strip() for line in log.splitlines()
                        if f"{student}/" in line and ("WARNING" in line or "ERROR" in line)
                        and not any(h in line for h in HARMLESS_LOG)})
        out[student] = {"scores": {e: list(v) for e, v in table.get(student, {}).items()},
                        "notebooks": notebooks, "log": lines}
    return normalised(out, normalise)


# --- grading ------------------------------------------------------------------------------------------------


def grade_demo(workdir: Path) -> dict[str, Any]:
    """`make demo` (python -m grader.classroom.course demo) in workdir/demo instead of the repository's .demo/."""
    from grader.classroom import course

    root = workdir / "demo"
    done = subprocess.run([sys.executable, "-m", "grader.classroom.course", "demo", "--dir", str(root)], cwd=course.REPO,
                          env=course.nbgrader_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the demo failed (exit status {done.returncode}):\n{done.stdout}\n{done.stderr}")
    log = (root / course.LOG_NAME).read_text(errors="replace") if (root / course.LOG_NAME).is_file() else ""
    normalise = normaliser({str(root): "<course>", str(workdir): "<work>", str(course.REPO): "<repo>"})
    return {"exit_status": done.returncode, "students": read_course(root, log, normalise)}


def grade_adversarial(workdir: Path, classes: list[str]) -> dict[str, Any]:
    """Each class of the corpus autograded as tests/test_adversarial.py does (its helpers, its nbgrader options)."""
    import test_adversarial as adversarial
    from grader.classroom import course

    template = adversarial._template(workdir)
    out: dict[str, Any] = {}
    for klass in classes:
        started = time.monotonic()
        graded = adversarial.grade_class(klass, workdir, template, SLOWDOWN)
        print(f"  {klass}: {len(adversarial.students_of(klass))} students, {time.monotonic() - started:.0f} s"
              + (" (KILLED)" if graded.killed else ""), flush=True)
        normalise = normaliser({str(graded.root): "<course>", str(workdir): "<work>", str(course.REPO): "<repo>"})
        students = [case.student for case in adversarial.students_of(klass)]
        out[klass] = {"exit_status": graded.returncode, "killed": graded.killed,
                      "policy": not adversarial.policy_off(klass),
                      "students": read_course(graded.root, graded.log, normalise, students)}
    return out


def snapshot(out: Path, classes: list[str] | None) -> int:
    from grader.isolation import sandbox

    available, why = sandbox.available()
    if not available:
        raise SystemExit(f"the sandbox is unavailable ({why}): verdicts are only meaningful as grading really runs "
                         "(as root, after make install)")
    import test_adversarial as adversarial

    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="verdicts-"))
    os.chmod(workdir, 0o755)
    try:
        data: dict[str, Any] = {}
        if classes is None:
            print("demo class (python -m grader.classroom.course demo) ...", flush=True)
            data["demo"] = grade_demo(workdir)
            print(f"  demo: {time.monotonic() - started:.0f} s", flush=True)
        unknown = set(classes or []) - set(adversarial.CLASSES)
        if unknown:
            raise SystemExit(f"no class {sorted(unknown)} in the corpus (classes: {', '.join(adversarial.CLASSES)})")
        print(f"adversarial corpus ({len(adversarial.CASES)} students) ...", flush=True)
        data["adversarial"] = grade_adversarial(workdir, classes or adversarial.CLASSES)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    write(data, out)
    print(f"wrote {out} ({time.monotonic() - started:.0f} s in all)")
    return 0


# --- comparing ----------------------------------------------------------------------------------------------


def differences(a: Any, b: Any, where: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        found = []
        for key in sorted(set(a) | set(b)):
            here = f"{where}/{key}" if where else key
            if key not in b:
                found.append(f"{here}: only in A: {_short(a[key])}")
            elif key not in a:
                found.append(f"{here}: only in B: {_short(b[key])}")
            else:
                found += differences(a[key], b[key], here)
        return found
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and any(isinstance(x, (dict, list)) for x in a):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{where}[{i}]")]
    if a == b:
        return []
    if isinstance(a, list) and isinstance(b, list) and all(isinstance(x, str) for x in a + b):  # log lines, outputs
        return [f"{where}:\n" + "\n".join([f"    only in A: {_short(x)}" for x in a if x not in b]
                                           + [f"    only in B: {_short(x)}" for x in b if x not in a]
                                           or [f"    A: {_short(a)}\n    B: {_short(b)}"])]
    if isinstance(a, str) and isinstance(b, str) and "\n" in a + b:  # a verdict's lines
        changed = sorted((line for line in difflib.ndiff(a.splitlines(), b.splitlines()) if line[:1] in "-+"),
                         key=lambda line: line[0] == "+")
        return [f"{where}:\n" + "\n".join(f"    {'A' if line[0] == '-' else 'B'}: {line[2:]}" for line in changed)]
    return [f"{where}:\n    A: {_short(a)}\n    B: {_short(b)}"]


def _short(value: Any, limit: int = 600) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


VERDICT_KEYS = {"score", "max_score", "points", "max_points", "status", "mistake", "exit_status", "killed", "hidden"}


def is_verdict(where: str) -> bool:
    """A difference in points, statuses, mistake keys or flags (rather than in a message's wording)."""
    parts = re.split(r"[/\[]", where)
    return bool({"scores", "gradebook", "flags"} & set(parts)) or parts[-1].rstrip("]") in VERDICT_KEYS \
        or ": only in" in where


def compare(first: Path, second: Path) -> int:
    a, b = (settle(json.loads(p.read_text(encoding="utf-8"))) for p in (first, second))
    found = differences(a, b)
    verdicts = [line for line in found if is_verdict(line.split(":\n", 1)[0])]
    texts = [line for line in found if line not in verdicts]
    for title, lines in (("points, statuses, mistake keys, flags, students or notebooks", verdicts),
                         ("texts only (messages, log lines)", texts)):
        if lines:
            print(f"== {len(lines)} difference(s) in {title}:")
            print("\n".join(lines))
    print(f"{len(found)} difference(s) between {first} (A) and {second} (B): {len(verdicts)} in verdicts, "
          f"{len(texts)} in texts" if found else f"no difference between {first} and {second}")
    return 1 if found else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tests/verdicts_snapshot.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=Path, help="the JSON file to write")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"), help="compare two snapshots")
    parser.add_argument("--classes", default=None,
                        help="comma-separated adversarial classes only (no demo): for trying the script")
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if not args.out:
        parser.error("give OUT.json, or --compare A.json B.json")
    return snapshot(args.out, args.classes.split(",") if args.classes else None)


if __name__ == "__main__":
    sys.exit(main())
