"""The demo class's submissions: each student's notebooks built from the release, the solutions' answers and the
catalogued mistakes (examples/)."""

from __future__ import annotations

import tomllib
from pathlib import Path



def strip_solution_markers(source: str) -> str:
    return "\n".join(line for line in source.split("\n") if "BEGIN SOLUTION" not in line and "END SOLUTION" not in line)


def answer_sources(solutions_dir: Path) -> dict[str, str]:
    """grade_id -> the instructor's answer, for every answer cell of every solutions notebook."""
    import nbformat

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
    import nbformat

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
