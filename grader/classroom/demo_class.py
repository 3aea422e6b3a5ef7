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


LANGUAGE_KEY = "language"  # students.toml: the language of the notebooks a student hands in (default "en")


def class_languages(students_file: Path) -> dict[str, str]:
    """students.toml -> {student: language}: "en" unless the student's table says language = "zh" (or another of
    folders.LANGUAGES), for a student who hands in that translation of the assignment (autograd-zh)."""
    from grader.classroom.folders import LANGUAGES

    spec = tomllib.loads(students_file.read_text(encoding="utf-8"))
    languages = {student: str(answers.get(LANGUAGE_KEY, "en")) for student, answers in spec.items()}
    for student, language in languages.items():
        if language != "en" and language not in LANGUAGES:
            raise SystemExit(f"{students_file}: student {student!r} has language = {language!r}; the course's "
                             f"languages: en, {', '.join(LANGUAGES)}")
    return languages


def class_answers(students_file: Path, solutions: dict[str, str], mistakes_dir: Path,
                  language: str = "en") -> dict[str, dict[str, str]]:
    """students.toml -> {student: {grade_id: answer source}}, for the students handing in notebooks in
    ``language`` (``solutions``: the answers of that language's solutions, answer_sources)."""
    spec = tomllib.loads(students_file.read_text(encoding="utf-8"))
    languages = class_languages(students_file)
    result: dict[str, dict[str, str]] = {}
    for student, answers in spec.items():
        if languages[student] != language:
            continue
        filled: dict[str, str] = {}
        if answers.get("all") == "solution":
            filled.update(solutions)
        for grade_id, value in answers.items():
            if grade_id in ("all", LANGUAGE_KEY):
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
