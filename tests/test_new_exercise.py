"""Adding an exercise is one spec entry and one solution notebook (docs/design.md, "To add an exercise").

A temporary course gets a copy of ``grader/`` whose only change is ONE entry in ``grader/spec/exercises.py`` (a custom
Function ``Tanh``), one solution notebook (nbgrader markers, test cells calling ``checks.<check>("tanh", ...)``), and
a class of four: the solution, two catalogued-style mistakes (``# expect:`` headers, as in examples/mistakes/) and a
stub. ``python -m grader.classroom.course demo`` autogrades it with nbgrader, the copy first on PYTHONPATH (so nbgrader, the
trusted judge and, mounted by the sandbox, the student's side all run the copy). The solution gets full marks, each
mistake loses exactly the points of the checks its header names and is diagnosed by name in its results and
feedback, and the stub gets 0.
"""

from __future__ import annotations

import filecmp
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]

# The spec entry: the whole of what the grader learns about the new exercise.
ENTRY = '''\
        Exercise(
            id="tanh",
            title="Tanh",
            classes=("Tanh",),
            formula="tanh(x)",
            reference=torch.tanh,
            input_names=("x",),
            make_probes=unary_probes("x"),
            extra_probes=unary_extras("x"),
            sections={"default": "1. Exercise: `Tanh`"},
            notebook="05_tanh.ipynb",
        ),
'''

SOLUTION = '''\
class Tanh(torch.autograd.Function):
    """out = tanh(x); backward reuses the saved output: d tanh(x)/dx = 1 - tanh(x)²."""

    @staticmethod
    def forward(ctx, x):
        ### BEGIN SOLUTION
        out = torch.tanh(x)
        ctx.save_for_backward(out)
        return out
        ### END SOLUTION

    @staticmethod
    def backward(ctx, grad_output):
        ### BEGIN SOLUTION
        (out,) = ctx.saved_tensors
        return grad_output * (1 - out**2)
        ### END SOLUTION
'''

CHECKS = {"forward": ("forward", 1), "first-order": ("first_derivatives", 2),
          "second-order": ("second_derivatives", 2), "structure": ("structure", 1)}

# Catalogued-style mistakes: the header says which checks pass and which mistake each other check names.
MISTAKES = {
    "tanh-derivative-not-squared.py": '''\
# exercise: tanh
# mistake: backward multiplies by 1 - tanh(x) instead of 1 - tanh(x)²
# expect: forward=pass first-order=wrong_gradient second-order=first_order_wrong_before_second structure=pass
class Tanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = torch.tanh(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        (out,) = ctx.saved_tensors
        return grad_output * (1 - out)
''',
    "tanh-forgot-grad-output.py": '''\
# exercise: tanh
# mistake: backward returns the local derivative 1 - tanh(x)², forgetting to multiply by grad_output
# expect: forward=pass first-order=forgot_grad_output second-order=first_order_wrong_before_second structure=pass
class Tanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = torch.tanh(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        (out,) = ctx.saved_tensors
        return 1 - out**2
''',
}

STUDENTS = '''\
[ada]  # right
tanh = "solution"

[bo]
tanh = "tanh-derivative-not-squared.py"

[cy]
tanh = "tanh-forgot-grad-output.py"

[dee]  # hands in the released notebook: the stub
'''


def _meta(grade_id: str, **fields: object) -> dict:
    base = {"grade": False, "grade_id": grade_id, "locked": False, "schema_version": 3, "solution": False,
            "task": False}
    return {"nbgrader": {**base, **fields}}


def solution_notebook() -> nbformat.NotebookNode:
    cells = [
        nbformat.v4.new_markdown_cell("# Notebook 5: `Tanh`\n\n## 1. Exercise: `Tanh`\n\nWrite `Tanh`."),
        nbformat.v4.new_code_cell("import torch\nfrom grader import checks", metadata=_meta("setup", locked=True)),
        nbformat.v4.new_code_cell(SOLUTION, metadata=_meta("tanh", solution=True)),
    ]
    for suffix, (public, points) in CHECKS.items():
        source = (f'from grader import checks\nchecks.{public}("tanh", Tanh.apply, shapes=[(3, 3)])\n'
                  f"### BEGIN HIDDEN TESTS\n"
                  f'checks.{public}("tanh", Tanh.apply, shapes=[(), (4,), (2, 3, 2)], seed=22)\n'
                  f"### END HIDDEN TESTS")
        cells.append(nbformat.v4.new_code_cell(source, metadata=_meta(f"tanh-{suffix}", grade=True, locked=True,
                                                                      points=points)))
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
                   "language_info": {"name": "python"}}
    return nb


def expected(name: str) -> dict[str, str]:
    line = re.search(r"^# expect: (.*)$", MISTAKES[name], re.M)
    assert line
    return dict(pair.split("=", 1) for pair in line.group(1).split())


def add_exercise(package: Path) -> None:
    """The one change to the grader: ENTRY appended to spec/exercises.py's EXERCISES."""
    spec = package / "spec" / "exercises.py"
    text = spec.read_text(encoding="utf-8")
    start = text.index("EXERCISES: dict[str, Exercise] = {")
    end = text.index("    ]\n}\n", start)
    spec.write_text(text[:end] + ENTRY + text[end:], encoding="utf-8")


def _differences(a: Path, b: Path) -> list[str]:
    """Files of two package trees that differ (or exist in one only), as paths relative to the trees."""
    found: list[str] = []

    def walk(cmp: filecmp.dircmp, prefix: str) -> None:
        found.extend(prefix + n for n in cmp.diff_files + cmp.left_only + cmp.right_only)
        for name, sub in cmp.subdirs.items():
            walk(sub, f"{prefix}{name}/")

    walk(filecmp.dircmp(a, b, ignore=["__pycache__"]), "")
    return sorted(found)


@pytest.fixture(scope="module")
def graded():
    """Course folder, demo's output and return code: the copy of the grader with Tanh added grades the class."""
    base = Path(tempfile.mkdtemp(prefix="new-exercise-"))
    os.chmod(base, 0o755)  # (the sandbox user reaches the package copy and the submissions)
    try:
        shutil.copytree(REPO / "grader", base / "grader", ignore=shutil.ignore_patterns("__pycache__"))
        add_exercise(base / "grader")
        assert _differences(REPO / "grader", base / "grader") == ["spec/exercises.py"]
        shutil.copy(REPO / "nbgrader_config.py", base / "nbgrader_config.py")
        (base / "solutions" / "autograd").mkdir(parents=True)
        nbformat.write(solution_notebook(), str(base / "solutions" / "autograd" / "05_tanh.ipynb"))
        (base / "examples" / "mistakes").mkdir(parents=True)
        for name, text in MISTAKES.items():
            (base / "examples" / "mistakes" / name).write_text(text, encoding="utf-8")
        (base / "examples" / "students.toml").write_text(STUDENTS, encoding="utf-8")
        for folder, _, files in os.walk(base):
            os.chmod(folder, 0o755)
            for name in files:
                os.chmod(os.path.join(folder, name), 0o644)
        env = {k: v for k, v in os.environ.items() if k not in ("GRADER_DB_URL", "GRADER_JOBS", "MAKEFLAGS")}
        env["PYTHONPATH"] = str(base)  # the copy first: nbgrader, its plugins, the judge and the sandbox's package
        done = subprocess.run([sys.executable, "-m", "grader.classroom.course", "demo", "--dir", str(base / "course")], cwd=base,
                              env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=900)
        probe = subprocess.run([sys.executable, "-c", "from grader.isolation import sandbox; "
                                                      "print(sandbox.trusted_package())"],
                               cwd=base, env=env, capture_output=True, text=True, timeout=120)
        yield base / "course", done.returncode, done.stdout, probe.stdout.strip()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _results(course: Path, student: str) -> dict:
    path = course / "grader_results" / "autograd" / student / "05_tanh.json"
    return json.loads(path.read_text(encoding="utf-8"))["exercises"]["tanh"]


def _feedback(course: Path, student: str) -> str:
    return html.unescape((course / "feedback" / student / "autograd" / "05_tanh.html").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_the_copy_with_one_spec_entry_is_what_grades_and_what_the_sandbox_mounts(graded):
    course, returncode, out, package = graded
    assert returncode == 0, out[-4000:]
    assert Path(package) == course.parent / "grader", "the grading processes did not import the copy first"


@pytest.mark.slow
def test_the_solution_gets_full_marks_and_the_stub_zero(graded):
    from grader.classroom import course as courses

    course, returncode, out, _ = graded
    assert returncode == 0, out[-4000:]
    scores = courses.gradebook_scores(f"sqlite:///{course / 'gradebook.db'}")
    full = float(sum(points for _, points in CHECKS.values()))
    assert scores["ada"]["tanh"] == (full, full), scores
    assert scores["dee"]["tanh"] == (0.0, full), scores
    assert all(c["status"] == "passed" for c in _results(course, "ada")["cells"])
    stub = _results(course, "dee")["cells"]
    assert {f["mistake"] for c in stub for f in c["findings"]} <= {"not_implemented", "unfinished_exercise"}, stub


@pytest.mark.slow
@pytest.mark.parametrize("student, mistake", [("bo", "tanh-derivative-not-squared.py"),
                                              ("cy", "tanh-forgot-grad-output.py")])
def test_each_mistake_loses_its_checks_points_and_is_diagnosed_by_name(graded, student, mistake):
    from grader.classroom import course as courses

    course, returncode, out, _ = graded
    assert returncode == 0, out[-4000:]
    expect = expected(mistake)
    scores = courses.gradebook_scores(f"sqlite:///{course / 'gradebook.db'}")
    points = {suffix: p for suffix, (_, p) in CHECKS.items()}
    assert scores[student]["tanh"][0] == sum(points[s] for s, outcome in expect.items() if outcome == "pass")
    cells = {c["grade_id"]: c for c in _results(course, student)["cells"]}
    page = _feedback(course, student)
    for suffix, outcome in expect.items():
        cell = cells[f"tanh-{suffix}"]
        if outcome == "pass":
            assert cell["status"] == "passed" and cell["points"] == points[suffix], cell
            continue
        assert cell["status"] == "failed" and cell["points"] == 0, cell
        assert outcome in [f["mistake"] for f in cell["findings"]], (suffix, cell["findings"])
        title = next(f["title"] for f in cell["findings"] if f["mistake"] == outcome)
        assert title and title in page, (title, "not in the feedback page")
        label = CHECKS[suffix][0].replace("_", " ")
        assert f"✗ tanh · {label}" in page, (label, "not named in the feedback page")


def _docs_section() -> str:
    text = (REPO / "docs" / "design.md").read_text(encoding="utf-8")
    start = text.index("## To add an exercise")
    end = text.find("\n#", start + 10)
    return text[start:end if end > 0 else None]


def test_the_docs_spec_entry_is_the_one_this_test_adds():
    import ast

    section = _docs_section()
    entry = next(b for b in re.findall(r"```python\n(.*?)```", section, re.S) if b.lstrip().startswith("Exercise("))
    assert ast.dump(ast.parse(entry.strip().rstrip(","))) == ast.dump(ast.parse(ENTRY.strip().rstrip(",")))
    assert "grader/spec/exercises.py" in section and "unary_probes" in section


def test_the_docs_list_exactly_the_registrys_custom_function_checks():
    from grader.spec import registry

    listed = re.search(r"The checks are (.*?) \(`grader/spec/registry.py`\)", _docs_section(), re.S)
    assert listed, "docs/design.md, 'To add an exercise': the sentence listing the checks"
    assert set(re.findall(r"`(\w+)`", listed.group(1))) == set(registry.CHECK_FUNCTIONS["checks"])
