"""`grader` command line: grade one notebook file, no course directory needed.

    grader grade notebooks/autograd/03_double_backward.ipynb          # text table
    grader grade my_submission.ipynb --json                           # machine-readable
    grader grade my.ipynb --tests solutions/autograd/03_double_backward.ipynb

Exit status: 0 graded (whatever the score); 2 bad input, said in one line on stderr (a missing file, not a
readable notebook, a notebook of another course, no tests to grade it with); 3 no sandbox and not allowed without.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from grader.spec.findings import display_width
from grader.boundary.limits import NOTEBOOK_SECONDS
from grader.judge.runner import NotebookResult, SandboxRefused, find_instructor_notebook, grade_notebook


def _points(x: float) -> str:
    return f"{x:g}"


def render_text(result: NotebookResult, verbose: bool = True, language: str = "en") -> str:
    """The scores as a table, then what to fix, in ``language`` (the notebook's: ``messages.language_of``)."""
    from grader.spec import messages

    with messages.using(language):
        return _render_text(result, verbose, messages.say)


def _render_text(result: NotebookResult, verbose: bool, say: Any) -> str:
    lines = [f"{result.notebook}  ({say('cli_tests_from', tests=result.tests_from)})", ""]
    rows = [(say("cli_exercise"), say("cli_score"), say("cli_checks"))]
    for name, cells in result.by_exercise().items():
        score = sum(c.points for c in cells)
        top = sum(c.max_points for c in cells)
        marks = "  ".join(
            f"{c.grade_id.removeprefix(name + '-')} {'✓' if c.status == 'passed' else '✗'}" for c in cells
        )
        rows.append((name, f"{_points(score)}/{_points(top)}", marks))
    widths = [max(display_width(r[i]) for r in rows) for i in range(2)]
    for r in rows:
        lines.append(f"  {_pad(r[0], widths[0])}  {_pad(r[1], widths[1], right=True)}  {r[2]}")
    lines.append(f"  {_pad(say('cli_total'), widths[0])}  {_points(result.score)}/{_points(result.max_score)}"
                 f"   ({result.seconds:.1f} s)")
    if result.problem:
        lines += ["", "! " + say("cli_stopped", problem=result.problem)]
    if result.restored:
        lines += ["", "! " + say("cli_restored", names=", ".join(result.restored))]
    failed = [c for c in result.cells if c.status != "passed"]
    if verbose and failed:
        lines += ["", say("cli_what_to_fix")]
        previous = ""
        for c in failed:
            message = c.message.strip() or c.status
            reason = re.sub(r"^✗ \S+ · [^:：]+[:：] ?", "", message)  # the same mistake seen by several checks
            shown = say("cli_same_reason") if reason == previous else message.replace("\n", "\n    ")
            lines.append(say("cli_fix_line", grade_id=c.grade_id, points=_points(c.max_points), shown=shown))
            previous = reason
    return "\n".join(lines)


def _pad(text: str, width: int, right: bool = False) -> str:
    """``text`` padded to ``width`` terminal columns (a Chinese character takes two: findings.display_width)."""
    space = " " * max(0, width - display_width(text))
    return space + text if right else text + space


def _readable(path: Path, role: str) -> tuple[Any, str]:
    """(the notebook, "") or (None, one line saying why ``path`` cannot be used as the ``role``)."""
    from grader.classroom.nbgrader_plugins import UnreadableSubmission, read_submission

    if not path.exists():
        return None, f"{path} does not exist."
    if not path.is_file():
        return None, f"{path} is not a file (give the {role} .ipynb file)."
    try:
        return read_submission(path), ""
    except UnreadableSubmission as why:
        return None, f"{path} cannot be read as a notebook: {why}."


def _grade_ids(notebook: Any, graded_only: bool = False) -> set[str]:
    """The grade_ids of the notebook's test cells (and, unless ``graded_only``, of its answer cells)."""
    ids = set()
    for cell in notebook.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if isinstance(meta, dict) and meta.get("grade_id") and (meta.get("grade") or
                                                                (meta.get("solution") and not graded_only)):
            ids.add(str(meta["grade_id"]))
    return ids


def unknown_name(path: Path, notebook: Any) -> str:
    """Why a notebook of the course under a name the course does not have (a browser's "03_double_backward
    (1).ipynb") is not graded with its own test cells only (no hidden tests): one line naming the notebook it is a
    copy of; "" when its cells are no course notebook's."""
    ids = _grade_ids(notebook)
    if not ids:
        return ""
    for start in [path.resolve().parent, Path.cwd(), Path(__file__).resolve().parents[2]]:
        for folder in [start, *start.parents]:
            shared: list[tuple[int, str, Path]] = []
            for candidate in sorted((folder / "solutions").glob("*/*.ipynb")):
                try:
                    shared.append((len(ids & _grade_ids(read_submission_quietly(candidate))), candidate.name, candidate))
                except Exception:
                    continue
            best = max(shared, default=(0, "", path))
            if best[0]:
                return (f"{path.name} is not a notebook name of this course: its cells are those of {best[1]} "
                        f"({best[2]}); rename it to {best[1]}, or give the tests with --tests (--own-tests grades "
                        "it without the hidden tests).")
    return ""


def read_submission_quietly(path: Path) -> Any:
    from grader.classroom.nbgrader_plugins import read_submission

    return read_submission(path)


def bad_input(path: Path, tests: Path | None, own_tests: bool) -> str:
    """Why this notebook cannot be graded with these tests, in one line; "" when it can."""
    from grader.judge.testcells import UnsupportedTestCell, parse

    notebook, why = _readable(path, "notebook")
    if notebook is None:
        return why
    if not own_tests and tests is None:
        tests = find_instructor_notebook(path)
        if tests is None:
            unknown = unknown_name(path, notebook)
            if unknown:
                return unknown
    if own_tests or tests is None:
        source, where = notebook, f"{path} (its own test cells)"
        if not _grade_ids(notebook, graded_only=True):
            return (f"no tests for {path}: no instructor notebook solutions/*/{path.name} was found, and it has no "
                    "test cells of its own. Give the instructor's notebook with --tests.")
    else:
        source, why = _readable(tests, "instructor's")
        if source is None:
            return f"the test notebook {why}"
        where = str(tests)
        if not _grade_ids(source, graded_only=True):
            return f"{tests} has no test cells (nbgrader cells with points): nothing to grade {path} with."
        if not _grade_ids(notebook) & _grade_ids(source):
            return (f"{path} is not a notebook of this course, or not the one {tests.name} tests: none of its "
                    f"exercise or test cells comes from {tests}.")
    for cell in source.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type == "code" and isinstance(meta, dict) and meta.get("grade") and not meta.get("solution"):
            try:
                parse(cell.source, str(meta.get("grade_id", "")))
            except UnsupportedTestCell as exc:
                return f"the tests in {where} are not checks this grader runs: {' '.join(str(exc).split())}."
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="grader", description="Grade course notebooks.")
    sub = parser.add_subparsers(dest="command", required=True)
    grade = sub.add_parser("grade", help="run one notebook in a separate process and print its scores")
    grade.add_argument("notebook", type=Path)
    grade.add_argument("--tests", type=Path, default=None,
                       help="instructor notebook whose test cells to use (default: solutions/*/<same name> if found)")
    grade.add_argument("--own-tests", action="store_true", help="use the notebook's own test cells (no hidden tests)")
    grade.add_argument("--json", action="store_true", help="print JSON instead of a table")
    grade.add_argument("--timeout", type=float, default=NOTEBOOK_SECONDS,
                       help=f"seconds for the whole notebook (default: {NOTEBOOK_SECONDS:g}, as nbgrader's autograde)")
    grade.add_argument("--quiet", action="store_true", help="table only, without the messages of failed checks")
    grade.add_argument("--allow-unsandboxed", action="store_true",
                       help="run the notebook without bubblewrap if the sandbox cannot start (only for trusted code)")
    args = parser.parse_args(argv)

    problem = bad_input(args.notebook, args.tests, args.own_tests)
    if problem:
        print(f"grader: {problem}", file=sys.stderr)
        return 2
    tests = None if args.own_tests else (args.tests or find_instructor_notebook(args.notebook))
    if not args.json:
        print(f"Grading {args.notebook} ...", file=sys.stderr, flush=True)
    try:
        result = grade_notebook(args.notebook, tests, timeout=args.timeout, allow_unsandboxed=args.allow_unsandboxed)
    except SandboxRefused as refused:
        print(f"grader: {refused}", file=sys.stderr)
        return 3
    if args.json:
        print(json.dumps(result.as_dict(), indent=2))
    else:
        from grader.spec import messages

        language = messages.language_of(read_submission_quietly(args.notebook))
        print(render_text(result, verbose=not args.quiet, language=language))
    return 0


if __name__ == "__main__":
    sys.exit(main())
