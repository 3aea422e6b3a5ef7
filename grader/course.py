"""Instructor tooling around nbgrader: the demo class, and the table of scores per student and exercise.

    grader demo      release, build the example class, autograde it with nbgrader, feedback, table
    grader scores    the table of the course in the current directory (after `nbgrader autograde`)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import nbformat

from .runner import exercise_of

ASSIGNMENT = "autograd"
REPO = Path(__file__).resolve().parent.parent


def say(text: str) -> None:
    print(text, flush=True)


# --- building submissions ------------------------------------------------------------------------


def strip_solution_markers(source: str) -> str:
    return "\n".join(line for line in source.split("\n") if "BEGIN SOLUTION" not in line and "END SOLUTION" not in line)


def answer_sources(solutions_dir: Path) -> dict[str, str]:
    """grade_id -> the instructor's answer, for every answer cell of every solutions notebook."""
    answers: dict[str, str] = {}
    for path in sorted(solutions_dir.glob("*.ipynb")):
        for cell in nbformat.read(str(path), as_version=4).cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("solution") and cell.cell_type == "code":
                answers[meta["grade_id"]] = strip_solution_markers(cell.source)
    return answers


def mistake_source(path: Path) -> str:
    """A catalogued mistake as an answer cell: the code without its header comments."""
    lines = path.read_text(encoding="utf-8").split("\n")
    while lines and lines[0].startswith("# "):
        lines.pop(0)
    return "\n".join(lines).strip("\n")


def build_submission(release_dir: Path, answers: dict[str, str], out_dir: Path) -> None:
    """Copy the released notebooks to ``out_dir`` with the given answer cells filled in."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in sorted(release_dir.glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        for cell in nb.cells:
            grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            if grade_id in answers and cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
                cell.source = answers[grade_id]
        nbformat.write(nb, str(out_dir / path.name))


def class_answers(students_file: Path, solutions: dict[str, str], mistakes_dir: Path) -> dict[str, dict[str, str]]:
    """students.toml -> {student: {grade_id: answer source}}."""
    spec = tomllib.loads(students_file.read_text(encoding="utf-8"))
    result: dict[str, dict[str, str]] = {}
    for student, answers in spec.items():
        filled: dict[str, str] = {}
        if answers.get("all") == "solution":
            filled.update(solutions)
        for grade_id, value in answers.items():
            if grade_id == "all":
                continue
            if value == "solution":
                filled[grade_id] = solutions[grade_id]
            else:
                path = mistakes_dir / value
                if not path.is_file():
                    raise SystemExit(f"{students_file}: student {student!r} uses {value!r}, not found in {mistakes_dir}")
                filled[grade_id] = mistake_source(path)
        result[student] = filled
    return result


# --- scores --------------------------------------------------------------------------------------


def gradebook_scores(db_url: str, assignment: str = ASSIGNMENT) -> dict[str, dict[str, tuple[float, float]]]:
    """{student: {exercise: (score, max)}} from nbgrader's gradebook (autograded scores, manual overrides applied)."""
    from nbgrader.api import Gradebook, MissingEntry

    table: dict[str, dict[str, tuple[float, float]]] = {}
    with Gradebook(db_url) as gb:
        for student in gb.students:
            try:
                submission = gb.find_submission(assignment, student.id)
            except MissingEntry:
                continue
            row: dict[str, tuple[float, float]] = {}
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    exercise = exercise_of(grade.name)
                    score, top = row.get(exercise, (0.0, 0.0))
                    row[exercise] = (score + float(grade.score or 0), top + float(grade.max_score or 0))
            table[student.id] = row
    return table


def render_scores(table: dict[str, dict[str, tuple[float, float]]]) -> str:
    if not table:
        return "No autograded submissions in the gradebook yet."
    exercises: list[str] = []
    for row in table.values():
        exercises += [e for e in row if e not in exercises]
    header = ["student", *exercises, "total"]
    rows = [header]
    for student in sorted(table):
        row = table[student]
        total = sum(s for s, _ in row.values())
        top = sum(m for _, m in row.values())
        rows.append([student, *(f"{row[e][0]:g}/{row[e][1]:g}" if e in row else "-" for e in exercises),
                     f"{total:g}/{top:g}"])
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(r, widths))) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


# --- running nbgrader ----------------------------------------------------------------------------


def nbgrader_command(*args: str) -> list[str]:
    return [str(Path(sys.executable).with_name("nbgrader")), *args]


def nbgrader_env() -> dict[str, str]:
    """The environment for nbgrader: its own bin/ on PATH (it runs `alembic` when it creates a gradebook)."""
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}


def nbgrader(args: list[str], root: Path) -> None:
    """Run an nbgrader command with the course config, from the repository root, for the course in ``root``."""
    command = nbgrader_command(*args, f"--CourseDirectory.root={root}")
    say("$ nbgrader " + " ".join(command[1:]))
    started = time.monotonic()
    done = subprocess.run(command, cwd=REPO, env=nbgrader_env())
    if done.returncode != 0:
        raise SystemExit(f"nbgrader {args[0]} failed (exit code {done.returncode}); its log is above.")
    say(f"  ({time.monotonic() - started:.0f} s)")


def demo(workdir: Path) -> int:
    """The main job on the bundled example class: release, autograde, feedback, table."""
    root = workdir.resolve()
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    os.symlink(REPO / "solutions", root / "solutions")
    say(f"Demo course in {root} (instructor notebooks from {REPO / 'solutions'})")
    say("1/4 release: generating the student notebooks with nbgrader")
    nbgrader(["generate_assignment", ASSIGNMENT, "--force", "--CourseDirectory.release_directory=release"], root)

    students = class_answers(REPO / "examples" / "students.toml", answer_sources(REPO / "solutions" / ASSIGNMENT),
                             REPO / "examples" / "mistakes")
    say(f"2/4 submissions: {len(students)} example students ({', '.join(students)})")
    for student, answers in students.items():
        build_submission(root / "release" / ASSIGNMENT, answers, root / "submitted" / student / ASSIGNMENT)

    say("3/4 autograde: nbgrader runs every notebook of every student (a few seconds each)")
    nbgrader(["autograde", ASSIGNMENT, "--force", "--CourseDirectory.release_directory=release"], root)
    say("4/4 feedback: one HTML page per student and notebook, then the class report")
    nbgrader(["generate_feedback", ASSIGNMENT, "--force", "--CourseDirectory.release_directory=release"], root)

    say("\nScores per student and exercise (from nbgrader's gradebook):\n")
    say(render_scores(gradebook_scores(f"sqlite:///{root / 'gradebook.db'}")))
    say(f"\nFeedback: {root / 'feedback'}/<student>/{ASSIGNMENT}/*.html")
    from .report import build

    page = build(root, ASSIGNMENT, root / "reports")
    say(f"Class report: {page} (and scores.csv, diagnoses.csv, flags.csv beside it)")
    flagged = flag_line(root, ASSIGNMENT)
    if flagged:
        say(flagged)
    return 0


def course_root(db_url: str) -> Path:
    """The course folder of a SQLite gradebook (where grader_results/ and reports/ are); else the current one."""
    prefix = "sqlite:///"
    return Path(db_url[len(prefix):]).parent if db_url.startswith(prefix) else Path(".")


def flag_line(root: Path, assignment: str = ASSIGNMENT) -> str:
    from .report import flag_line as line

    return line(root, assignment)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m grader.course")
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="autograde the bundled example class in a scratch course directory")
    d.add_argument("--dir", type=Path, default=REPO / ".demo", help="scratch course directory (replaced)")
    s = sub.add_parser("scores", help="print scores per student and exercise from a gradebook")
    s.add_argument("--db", default="sqlite:///gradebook.db")
    s.add_argument("--root", type=Path, default=None,
                   help="course folder with grader_results/ (default: the gradebook's folder)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo(args.dir)
    say(render_scores(gradebook_scores(args.db)))
    flagged = flag_line(args.root or course_root(args.db))
    if flagged:
        say(flagged)
    return 0


if __name__ == "__main__":
    sys.exit(main())
