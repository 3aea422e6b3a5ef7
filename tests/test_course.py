"""nbgrader round trip: the bundled class through `nbgrader generate_assignment / autograde / generate_feedback`.

The solutions get full marks, untouched notebooks get zero without crashing nbgrader, and each catalogued mistake
loses exactly the points of the checks its catalogue entry says it fails.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import EXAMPLES, SOLUTIONS, nbgrader_meta, read_entry
from grader.classroom import course
from grader.judge.runner import exercise_of

import nbformat


NOTEBOOK_NAMES = sorted(p.name for p in SOLUTIONS.glob("*.ipynb"))


def points_per_cell() -> dict[str, float]:
    return {nbgrader_meta(c)["grade_id"]: float(nbgrader_meta(c)["points"])
            for path in SOLUTIONS.glob("*.ipynb") for c in nbformat.read(str(path), as_version=4).cells
            if nbgrader_meta(c).get("grade")}


def expected_scores(language: str | None = "en") -> dict[str, dict[str, float]]:
    """student -> exercise -> points, derived from students.toml and the catalogue's `# expect:` lines, for the
    students handing in the notebooks of ``language`` (None: the whole class; a translation scores the same)."""
    points = points_per_cell()
    exercises = sorted({exercise_of(g) for g in points})
    full = {e: sum(p for g, p in points.items() if exercise_of(g) == e) for e in exercises}
    spec = tomllib.loads((EXAMPLES / "students.toml").read_text(encoding="utf-8"))
    table = {}
    for student, answers in spec.items():
        if language is not None and answers.get("language", "en") != language:
            continue
        row = {e: (full[e] if answers.get("all") == "solution" else 0.0) for e in exercises}
        for exercise, value in answers.items():
            if exercise in ("all", "language"):
                continue
            if value == "solution":
                row[exercise] = full[exercise]
            else:
                entry = read_entry(EXAMPLES / "mistakes" / value)
                row[exercise] = sum(points[f"{exercise}-{suffix}"] for suffix, outcome in entry.expect.items()
                                    if outcome == "pass")
        table[student] = row
    return table


FULL_MARKS = sum(points_per_cell().values())  # every graded cell of every notebook (57 with notebook 4)


def test_the_demo_class_has_a_perfect_a_blank_and_several_mistaken_students():
    spec = tomllib.loads((EXAMPLES / "students.toml").read_text(encoding="utf-8"))
    expected = expected_scores()
    totals = {s: sum(row.values()) for s, row in expected.items()}
    top = max(totals.values())
    assert "blank" in spec and totals["blank"] == 0
    assert any(t == top for t in totals.values())
    assert sum(0 < t < top for t in totals.values()) >= 3


def chinese_twins() -> dict[str, str]:
    """Each Chinese-speaking student of the demo class -> the English student with the same answers (students.toml:
    the same table but for language = "zh")."""
    spec = tomllib.loads((EXAMPLES / "students.toml").read_text(encoding="utf-8"))
    english = {s: a for s, a in spec.items() if a.get("language", "en") == "en"}
    twins = {}
    for student, answers in spec.items():
        if answers.get("language", "en") == "zh":
            same = [s for s, a in english.items() if a == {k: v for k, v in answers.items() if k != "language"}]
            assert same, f"students.toml: {student} (zh) has the answers of no English student"
            twins[student] = same[0]
    return twins


def test_the_demo_class_has_chinese_students_a_perfect_one_and_one_with_mistakes():
    """Issue 23: `make demo` shows Chinese-speaking students, with the kinds of answers English students have."""
    twins = chinese_twins()
    expected = expected_scores(None)
    totals = {s: sum(expected[s].values()) for s in twins}
    assert totals and max(totals.values()) == FULL_MARKS, totals
    assert any(0 < t < FULL_MARKS for t in totals.values()), totals
    assert set(course.class_languages(EXAMPLES / "students.toml").values()) == {"en", "zh"}


# demo_run: the fixture of conftest.py (`python -m grader.classroom.course demo`, run once for every file that reads it)


@pytest.mark.slow
def test_nbgrader_autogrades_the_bundled_class_to_the_expected_scores(demo_run):
    tmp_path, returncode, out = demo_run
    assert returncode == 0, out[-4000:]
    got, languages = course.class_scores(f"sqlite:///{tmp_path / 'course' / 'gradebook.db'}")
    expected = expected_scores(None)
    assert set(got) == set(expected)
    for student, row in expected.items():
        assert {e: got[student][e][0] for e in row} == row, f"{student}: nbgrader's scores differ from the catalogue"
    # Feedback for every student and notebook (in the assignment they handed in), and the table printed.
    for student, language in languages.items():
        folder = "autograd" if language == "en" else f"autograd-{language}"
        assert len(list((tmp_path / "course" / "feedback" / student / folder).glob("*.html"))) == len(NOTEBOOK_NAMES)
    assert "student" in out and "ada" in out and "total" in out
    # Feedback names each hidden check with its outcome and diagnosis, never its code (nbgrader #917).
    page = (tmp_path / "course" / "feedback" / "chen" / "autograd" / "03_double_backward.html").read_text()
    assert "BEGIN HIDDEN TESTS" not in page and "seed=11" not in page
    assert "[hidden check, other inputs] ✗ square · first derivatives: the gradient for `x` ignores the gradient backward receives" in page
    assert '<html lang="en">' in page and "Score:" in page and "(Top)" in page
    # wen handed in the Chinese notebooks: her page's frame is Chinese and says so (issue 33: "Score", "Checks",
    # "(Top)" were English, and without lang="zh-CN" a browser drew 直 and 骨 in their Japanese forms)
    zh_page = (tmp_path / "course" / "feedback" / "wen" / "autograd-zh" / "03_double_backward.html").read_text()
    assert '<html lang="zh-CN">' in zh_page and "得分：" in zh_page and "（回到顶部）" in zh_page, zh_page[:3000]
    assert "Score:" not in zh_page and "(Top)" not in zh_page and "Checks:" not in zh_page
    # The class report counts the planted mistakes under the students who made them.
    import csv

    rows = list(csv.DictReader(open(tmp_path / "course" / "reports" / "diagnoses.csv")))
    who = {(r["exercise"], r["mistake"]): set(r["who"].split()) for r in rows}
    assert who[("square", "forgot_grad_output")] == {"chen", "wen"}  # (wen: chen's answers, in Chinese)
    assert who[("sinh", "intermediates_not_outputs")] == {"chen", "wen"}
    assert who[("linear", "transposed_gradient")] == {"dara"}
    assert who[("exp", "tensor_on_ctx")] == {"eli"}
    assert (tmp_path / "course" / "reports" / "class-report.html").stat().st_size > 10_000
    # Autograded notebooks keep what each cell showed in the sandbox, as stock nbgrader does (issue 8, item 1).
    _assert_students_own_outputs_are_kept(tmp_path / "course")


def _assert_students_own_outputs_are_kept(root: Path) -> None:
    import nbformat

    def cells(student: str, name: str) -> list:
        return [c for c in nbformat.read(str(root / "autograded" / student / "autograd" / name), as_version=4).cells
                if c.cell_type == "code"]

    # A cell that raised shows that error, with its traceback (fay: her Square detaches, so the "Try it yourself"
    # cell's gradgradcheck raises).
    errors = [o for c in cells("fay", "03_double_backward.ipynb") for o in c.outputs if o.output_type == "error"
              and not c.metadata.get("nbgrader", {}).get("grade")]
    assert errors and errors[0].ename == "GradcheckError" and "Jacobian mismatch" in errors[0].evalue, errors
    assert errors[0].traceback, "the error keeps its traceback"
    # A cell using an untouched stub says it was skipped, and the notebook went on (blank: nothing raised).
    blank = cells("blank", "02_custom_function.ipynb")
    assert not [o for c in blank if not c.metadata.get("nbgrader", {}).get("grade") for o in c.outputs
                if o.output_type == "error"]
    assert any("skipped: exercise 'linear' is not done yet" in o.get("text", "") for c in blank for o in c.outputs)
    # A graph cell shows its SVG (as an image: no markup of the student's own reaches the page).
    graphs = [o for c in cells("ada", "03_double_backward.ipynb") for o in c.outputs
              if "text/html" in o.get("data", {}) and "data:image/svg+xml;base64," in o.data["text/html"]]
    assert graphs, "no graph of notebook 3 kept its picture"
    # Prints of teaching cells are there too, and the feedback page shows them.
    printed = [o.text for c in cells("ada", "01_autograd_basics.ipynb") for o in c.outputs if o.output_type == "stream"]
    assert any(text.strip() for text in printed)
    page = (root / "feedback" / "ada" / "autograd" / "03_double_backward.html").read_text()
    assert "data:image/svg+xml;base64," in page


# --- the Chinese-speaking students of the demo class (issue 23) -----------------------------------------------


def _cell_grades(db_url: str, assignment: str, student: str) -> dict[tuple[str, str], tuple[float, float]]:
    """(notebook, grade_id) -> (score, max) of one submission, from nbgrader's gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as gb:
        submission = gb.find_submission(assignment, student)
        return {(nb.name, grade.name): (float(grade.score), float(grade.max_score))
                for nb in submission.notebooks for grade in nb.grades}


@pytest.mark.slow
def test_the_chinese_students_score_exactly_what_their_english_twins_score(demo_run):
    """mei and wen hand in the Chinese notebooks (autograd-zh) with the answers ada and chen hand in in English:
    nbgrader gives them the same points on every graded cell, in the same gradebook."""
    tmp_path, returncode, out = demo_run
    assert returncode == 0, out[-4000:]
    root = tmp_path / "course"
    db = f"sqlite:///{root / 'gradebook.db'}"
    twins = chinese_twins()
    assert twins, "students.toml has no Chinese-speaking student"
    for chinese, english in twins.items():
        handed_in = sorted((root / "autograded" / chinese / "autograd-zh").glob("*.ipynb"))
        assert [p.name for p in handed_in] == NOTEBOOK_NAMES, chinese
        assert all(nbformat.read(str(p), as_version=4).metadata["autograd_course"]["language"] == "zh"
                   for p in handed_in), f"{chinese} was graded on the Chinese notebooks"
        assert not (root / "autograded" / chinese / "autograd").exists()
        zh, en = _cell_grades(db, "autograd-zh", chinese), _cell_grades(db, "autograd", english)
        assert len(zh) == len(en) >= 40
        assert zh == en, {k: (en.get(k), zh.get(k)) for k in set(zh) | set(en) if zh.get(k) != en.get(k)}
    wen = expected_scores(None)["wen"]  # (and both are what the catalogue predicts: not just equally wrong)
    assert 0 < sum(wen.values()) < FULL_MARKS


@pytest.mark.slow
def test_the_demo_table_shows_each_students_language(demo_run):
    """One table for the class: a column "lang" says which notebooks each student handed in."""
    tmp_path, returncode, out = demo_run
    assert returncode == 0, out[-4000:]
    lines = out.rstrip("\n").split("\n")
    header = next(line for line in lines if line.startswith("student "))
    assert header.split()[:2] == ["student", "lang"], header
    languages = course.class_languages(EXAMPLES / "students.toml")
    rows = {line.split()[0]: line.split()[1] for line in lines[lines.index(header) + 2:] if line.split()[:1]
            and line.split()[0] in languages}
    assert rows == languages, rows
    assert rows["mei"] == rows["wen"] == "zh" and rows["ada"] == "en"
    assert "mei (zh)" in out and "autograd-zh: 12 notebooks" in out, out  # two students, six notebooks each


@pytest.mark.slow
def test_the_class_report_covers_both_assignments_and_shows_each_students_language(demo_run):
    """The class report (English) counts the Chinese students with the English ones: their language in the scores
    table and scores.csv, a mistake's students named with it (wen (zh) beside chen)."""
    import csv
    import html as html_module

    tmp_path, returncode, out = demo_run
    assert returncode == 0, out[-4000:]
    reports = tmp_path / "course" / "reports"
    page = html_module.unescape((reports / "class-report.html").read_text(encoding="utf-8"))
    assert "Class report: autograd, autograd-zh" in page
    assert "8 students (6 English, 2 Chinese)" in page, page[:3000]
    scores = page.split('<table id="scores">', 1)[1].split("</table>", 1)[0]
    assert "<th>student</th><th>lang</th>" in scores
    assert "<tr><td>wen</td><td>zh</td>" in scores and "<tr><td>chen</td><td>en</td>" in scores, scores[:2000]
    mistakes = page.split('<table id="mistakes">', 1)[1].split("</table>", 1)[0]
    assert "chen, wen (zh)</td>" in mistakes, mistakes[:3000]
    assert "ignores the gradient backward receives" in mistakes, "the sentence an English notebook showed"
    rows = {r["student"]: r for r in csv.DictReader(open(reports / "scores.csv", encoding="utf-8"))}
    assert {s: r["lang"] for s, r in rows.items()} == course.class_languages(EXAMPLES / "students.toml")
    assert rows["wen"]["total"] == rows["chen"]["total"] and rows["mei"]["total"] == rows["ada"]["total"]
    who = {(r["exercise"], r["mistake"]): set(r["who"].split())
           for r in csv.DictReader(open(reports / "diagnoses.csv", encoding="utf-8"))}
    assert who[("square", "forgot_grad_output")] == {"chen", "wen"}


# --- what the instructor reads (issue 8, items 3 and 5) -----------------------------------------------------


@pytest.mark.slow
def test_the_demo_says_what_happened_in_at_most_40_lines(demo_run):
    """One line per stage, the progress, the table, where the files and nbgrader's full log are; expected
    warnings (checksums of test cells with hidden tests, SQLAlchemy's) are silenced at their source."""
    tmp_path, returncode, out = demo_run
    lines = out.rstrip("\n").split("\n")
    assert returncode == 0, out[-4000:]
    assert len(lines) <= 38, f"{len(lines)} lines (make adds one, 40 at most):\n{out}"
    assert "\r" not in out, "not a terminal: plain lines, no progress bar redrawn in place"
    for noise in ("checksum", "SAWarning", "Traceback", "WARNING", "display_data_priority"):
        assert noise not in out, f"{noise!r} in:\n{out}"
    header = next(line for line in lines if line.startswith("student "))
    assert "total" in header and any(line.startswith("ada ") and f"{FULL_MARKS:g}/{FULL_MARKS:g}" in line for line in lines), out
    log_lines = [line for line in lines if "log" in line and str(tmp_path / "course") in line]
    assert log_lines, out
    log = Path(log_lines[-1].rsplit(" ", 1)[-1])
    assert log.is_file(), log_lines
    text = log.read_text()
    assert "generate_assignment" in text and "autograde" in text and "generate_feedback" in text
    assert "ada/autograd/03_double_backward: 24/24 points" in text
    for language in ("en", "zh"):  # one autograde per assignment, each with its progress
        notebooks = len(expected_scores(language)) * len(NOTEBOOK_NAMES)
        assert any(f"{notebooks}/{notebooks}" in line for line in lines), f"the progress over the {notebooks} notebooks"


@pytest.mark.slow
def test_the_class_report_lists_not_attempted_apart_from_mistakes(demo_run):
    """Issue 21: blank and unfinished exercises (stubs still raising NotImplementedError) are not the class's
    "most frequent mistakes": they get a table of their own; the mistakes table and its plot hold mistakes only."""
    import csv
    import html as html_module

    tmp_path, returncode, out = demo_run
    assert returncode == 0, out[-4000:]
    reports = tmp_path / "course" / "reports"
    page = (reports / "class-report.html").read_text(encoding="utf-8")
    mistakes = page.split('<table id="mistakes">', 1)[1].split("</table>", 1)[0]
    assert "not_implemented" not in mistakes and "not implemented yet" not in mistakes, mistakes[:2000]
    assert "forgot_grad_output" in mistakes and "transposed_gradient" in mistakes
    apart = html_module.unescape(page.split('<table id="not-attempted">', 1)[1].split("</table>", 1)[0])
    assert "<td>vjp</td><td><b>2</b></td><td>blank, fay</td>" in apart, apart
    rows = list(csv.DictReader(open(reports / "diagnoses.csv", encoding="utf-8")))
    assert {r["kind"] for r in rows if r["mistake"] == "not_implemented"} == {"not attempted"}
    assert {r["kind"] for r in rows if r["mistake"] == "forgot_grad_output"} == {"mistake"}


@pytest.mark.slow
def test_what_students_are_shown_holds_no_absolute_path_of_the_instructor(demo_run):
    """Issue 21: tracebacks kept in the autograded notebooks (torch's frames), verdicts and diagnoses show paths
    relative to the course (site-packages/torch/..., submitted/<student>/...), never where the course lives."""
    tmp_path, returncode, out = demo_run
    assert returncode == 0, out[-4000:]
    root = tmp_path / "course"
    secret = [str(course.REPO), str(root), os.path.realpath(root), str(Path.home()) + "/"]
    shown = [*root.glob("feedback/*/autograd*/*.html"), *root.glob("autograded/*/autograd*/*.ipynb"),
             *root.glob("grader_results/autograd*/*/*.json")]
    assert len(shown) >= 3 * 24, shown
    leaks = {str(p.relative_to(root)): [s for s in secret if s in p.read_text(encoding="utf-8")] for p in shown}
    assert not {p: s for p, s in leaks.items() if s}, {p: s for p, s in leaks.items() if s}
    page = (root / "feedback" / "fay" / "autograd" / "03_double_backward.html").read_text(encoding="utf-8")
    assert "site-packages/torch/autograd/gradcheck.py" in page, "the traceback keeps its frames, made relative"
    # the page's index names each graded test cell (issue 30: it said "Test cell" for every one)
    assert '<a href="#square-first-order">Checks: square-first-order</a>' in page and '">Test cell</a>' not in page


@pytest.mark.slow
def test_make_feedback_prints_a_progress_line_not_nbgraders_log(demo_run, tmp_path):
    """Issue 21: `make feedback` (python -m grader.classroom.course feedback) writes every page and says so in a few lines;
    nbgrader's own lines (about ten per student) go to nbgrader.log."""
    demo, returncode, out = demo_run
    assert returncode == 0, out[-4000:]
    root = tmp_path / "course"  # a copy: the demo's course is shared with other tests, read meanwhile
    shutil.copytree(demo / "course", root, symlinks=True)
    recipe = subprocess.run(["make", "-n", "feedback"], cwd=course.REPO, capture_output=True, text=True).stdout
    assert "grader.classroom.course feedback" in recipe and "generate_feedback" not in recipe, recipe
    shutil.rmtree(root / "feedback")  # (as before the first `make feedback`)
    done = subprocess.run([sys.executable, "-m", "grader.classroom.course", "feedback", "--root", str(root)], cwd=course.REPO,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    pages = len(expected_scores()) * len(NOTEBOOK_NAMES)
    assert len(list(root.glob("feedback/*/autograd/*.html"))) == pages
    lines = said.strip().splitlines()
    assert len(lines) <= 3 + 3, said  # what it does, the progress (a bar, or 3 plain quarter lines), the end
    assert "GenerateFeedbackApp" not in said and "Writing" not in said, said
    assert f"feedback: {pages} pages written to {root / 'feedback'}/<student>/autograd/" in said, said
    assert "GenerateFeedbackApp" in (root / course.LOG_NAME).read_text(), "nbgrader's lines are in its log"


def _fresh_clone(destination: Path) -> Path:
    """The repository as a fresh clone has it: the files git tracks (and new ones not ignored), no gradebook."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=course.REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = course.REPO / name
        if source.is_file() or source.is_symlink():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name, follow_symlinks=False)
    return destination


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_autograde_with_nothing_submitted_says_so_in_one_line(tmp_path, capsys):
    (tmp_path / "submitted").mkdir()
    assert course.main(["autograde", "--root", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert len((out + err).strip().splitlines()) == 1 and "Nothing to grade" in out, out + err
    assert not (tmp_path / "gradebook.db").exists()


@pytest.fixture
def public_tmp():
    """A scratch folder the sandbox user can reach (pytest's tmp_path is private to root)."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="fresh-clone-"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_autograde_from_a_fresh_clone_just_works(public_tmp):
    """No gradebook.db and no `make release`: the gradebook is created from the committed course, committed
    files stay as they are; a notebook of another course is recorded as ungradable with the reason, a student who
    handed in only unknown files is named in one line, and the rest of the class is graded."""
    from test_cli import _foreign_notebook

    import nbformat

    clone = _fresh_clone(public_tmp / "clone")
    assert not (clone / "gradebook.db").exists() and (clone / "notebooks" / course.ASSIGNMENT).is_dir()
    before = _digest(clone)
    submitted = clone / "submitted"
    course.build_submission(clone / "notebooks" / course.ASSIGNMENT, course.answer_sources(SOLUTIONS),
                            submitted / "ada" / course.ASSIGNMENT)
    other = submitted / "olga" / course.ASSIGNMENT
    other.mkdir(parents=True)
    nbformat.write(_foreign_notebook(), str(other / "01_autograd_basics.ipynb"))
    stray = submitted / "sam" / course.ASSIGNMENT
    stray.mkdir(parents=True)
    nbformat.write(_foreign_notebook(), str(stray / "homework3.ipynb"))

    done = subprocess.run([sys.executable, "-m", "grader.classroom.course", "autograde"], cwd=clone, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": ""})
    out = done.stdout
    assert done.returncode == 0, out[-4000:]
    assert "Traceback" not in out and "No assignment with ID" not in out, out[-4000:]
    assert any(line.startswith("ada ") and f"{FULL_MARKS:g}/{FULL_MARKS:g}" in line for line in out.splitlines()), out
    olga = [line for line in out.splitlines() if "olga" in line and "not a notebook of this course" in line]
    assert len(olga) == 1, out
    sam = [line for line in out.splitlines() if "sam" in line and "homework3.ipynb" in line]
    assert len(sam) == 1, out
    scores = course.gradebook_scores(f"sqlite:///{clone / 'gradebook.db'}")
    assert all(s == m > 0 for s, m in scores["ada"].values()), scores["ada"]
    assert scores["olga"] and all(s == 0 for s, _ in scores["olga"].values()), scores["olga"]
    autograded = nbformat.read(str(clone / "autograded" / "olga" / course.ASSIGNMENT / "01_autograd_basics.ipynb"), 4)
    verdicts = [" ".join(o.get("evalue", "") for o in c.outputs) for c in autograded.cells
                if c.get("metadata", {}).get("nbgrader", {}).get("grade")]
    assert verdicts and all("not a notebook of this course" in v for v in verdicts), verdicts
    after = _digest(clone)
    assert {k: v for k, v in after.items() if k in before} == before, "committed files were rewritten"
    # (and the grader's bytecode, gitignored: grader.classroom.course writes it where it is missing, in every layer)
    created = {k.split("/")[0] for k in after if k not in before and not (k.startswith("grader/") and "/__pycache__/" in k)}
    assert created <= {"submitted", "autograded", "gradebook.db", "grader_results", "nbgrader.log", "logs", "reports",
                       course.LOCK_NAME}, created


def _scores_through_nbgraders_objects(db_url: str) -> dict[str, dict[str, tuple[float, float]]]:
    """The score table as nbgrader's own objects give it (Gradebook.students, find_submission, each notebook's
    grades): what gradebook_scores' two queries must equal."""
    from nbgrader.api import Gradebook, MissingEntry

    order = course._cell_order(course.ASSIGNMENT)
    table: dict[str, dict[str, tuple[float, float]]] = {}
    with Gradebook(db_url) as gb:
        for student in gb.students:
            try:
                submission = gb.find_submission(course.ASSIGNMENT, student.id)
            except MissingEntry:
                continue
            row: dict[str, tuple[float, float]] = {}
            for notebook in sorted(submission.notebooks, key=lambda nb: nb.name):
                for grade in sorted(notebook.grades, key=lambda g: (order.get(g.name, len(order)), g.name)):
                    score, top = row.get(exercise_of(grade.name), (0.0, 0.0))
                    row[exercise_of(grade.name)] = (score + float(grade.score or 0), top + float(grade.max_score or 0))
            table[student.id] = row
    return table


def test_the_score_table_is_nbgraders_scores_with_manual_grades_and_extra_credit(tmp_path, monkeypatch):
    """Two queries for the whole class, equal to nbgrader's per-object view: autograded, manually graded and
    extra-credited cells, a student who handed nothing in (left out), another assignment's submission (ignored),
    cells recorded out of the course's order, and the students an nbgrader process leaves to the others."""
    from nbgrader.api import Grade, Gradebook

    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")  # alembic
    db_url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    cells = {"02_custom_function": ["square-first-order", "linear", "square-second-order"],
             "01_autograd_basics": ["vjp", "accumulate"]}
    with Gradebook(db_url) as gb:
        for assignment in (course.ASSIGNMENT, "other"):
            gb.add_assignment(assignment)
            for notebook, names in cells.items():
                gb.add_notebook(notebook, assignment)
                for points, name in enumerate(names, 2):
                    gb.add_grade_cell(name, notebook, assignment, max_score=points, cell_type="code")
        for student, last in (("zoe", "Adams"), ("ann", "Young"), ("bob", "Brown"), ("cy", "Cole")):
            gb.add_student(student, last_name=last)
        for student in ("zoe", "ann", "bob"):
            gb.add_submission(course.ASSIGNMENT, student)
        gb.add_submission("other", "cy")
        for grade in gb.db.query(Grade):
            grade.auto_score = {"zoe": 1.0, "ann": 2.0, "bob": None}[grade.student.id] if grade.assignment.name == \
                course.ASSIGNMENT else 9.0
        gb.db.commit()
        manual = gb.find_grade("linear", "02_custom_function", course.ASSIGNMENT, "ann")
        manual.manual_score, manual.extra_credit = 0.5, 1.5
        gb.find_grade("vjp", "01_autograd_basics", course.ASSIGNMENT, "bob").manual_score = 2.0
        gb.db.commit()

    table = course.gradebook_scores(db_url)
    assert table == _scores_through_nbgraders_objects(db_url)
    assert list(table) == ["zoe", "bob", "ann"], "nbgrader's order of students (by last name)"
    assert list(table["ann"]) == ["vjp", "accumulate", "linear", "square"], "the course's order of exercises"
    assert table["ann"]["linear"] == (2.0, 3.0) and table["bob"]["vjp"] == (2.0, 2.0)
    assert table["zoe"]["square"] == (2.0, 2 + 4)
    assert course.gradebook_scores(db_url, leave_out={"zoe", "cy"}) == {k: table[k] for k in ("bob", "ann")}
