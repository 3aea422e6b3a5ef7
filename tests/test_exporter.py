"""nbgrader's own work per notebook, made cheaper without changing what it writes or decides (issue 10):
* the exporter for autograding (grader.classroom.nbgrader_plugins.SubmissionExporter) writes what nbconvert's
  NotebookExporter writes, without deep copies of a notebook read for that pass alone, nor the schema validation
  of the text written (which only logs);
* OverwriteCells (OverwriteReleasedCells) reads each cell from the gradebook's cells read once per process,
  with the gradebook's answers."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import nbformat
import pytest
from nbconvert.exporters import NotebookExporter

from grader.classroom import course
from grader.classroom.nbgrader_plugins import SubmissionExporter, _ReadForThisCall

SOLUTIONS = sorted((course.REPO / "solutions" / course.ASSIGNMENT).glob("*.ipynb"))


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_the_autograding_exporter_writes_what_nbconvert_writes(path: Path):
    nb = nbformat.read(str(path), as_version=4)
    nb.cells[0].setdefault("outputs", [])  # (a markdown cell: an invalid field, written all the same by both)
    ours, _ = SubmissionExporter().from_notebook_node(copy.deepcopy(nb), {})
    theirs, _ = NotebookExporter().from_notebook_node(copy.deepcopy(nb), {})
    assert ours == theirs


def test_a_notebook_read_for_one_export_is_handed_over_then_copied_as_usual():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    plain = copy.deepcopy(nb)
    assert copy.deepcopy(plain) is not plain
    owned = _ReadForThisCall.of(nb)
    for _ in range(_ReadForThisCall.HANDOVERS):
        assert copy.deepcopy(owned) is owned  # nbconvert's copies, which nobody else would have seen
    assert "_handovers" not in owned and "_handovers" not in nbformat.writes(owned)
    again = copy.deepcopy(owned)
    assert again is not owned and again == owned and type(again) is nbformat.NotebookNode
    again.cells[0].source = "y = 2"
    assert owned.cells[0].source == "x = 1"


@pytest.mark.parametrize("path", SOLUTIONS[:2], ids=[p.stem for p in SOLUTIONS[:2]])
def test_nbconverts_copies_before_the_preprocessors_are_the_ones_handed_over(path: Path):
    """The first preprocessor gets the very notebook that was read (nbconvert made exactly HANDOVERS deep copies
    before it); a deep copy a preprocessor makes is a real one; and the text written is nbconvert's own."""
    from nbconvert.preprocessors import Preprocessor

    seen: list = []

    class Record(Preprocessor):
        def preprocess(self, nb, resources):
            mine = copy.deepcopy(nb)
            mine.cells.clear()
            seen.append((nb, len(nb.cells)))
            return nb, resources

    read = nbformat.read(str(path), as_version=4)
    expected, _ = NotebookExporter(preprocessors=[Record()]).from_notebook_node(copy.deepcopy(read), {})
    seen.clear()
    nb = _ReadForThisCall.of(copy.deepcopy(read))
    ours, _ = SubmissionExporter(preprocessors=[Record()]).from_notebook_node(nb, {})
    (got, cells), = seen
    assert got is nb, "the first preprocessor gets the notebook read, not a copy"
    assert cells == len(read.cells) > 0 and len(nb.cells) == cells, "a preprocessor's own deep copy is a real one"
    assert type(nb) is nbformat.NotebookNode and ours == expected


@pytest.mark.slow
def test_overwrite_cells_reads_from_memory_exactly_what_the_gradebook_holds(tmp_path, released_template):
    """OverwriteReleasedCells asks _CellsReadOnce, not the database, for each cell: the same answers, and
    nbgrader's MissingEntry for a cell the gradebook does not know (a renamed or invented grade_id)."""
    from nbgrader.api import Gradebook, MissingEntry

    from grader.classroom.nbgrader_plugins import _CellsReadOnce, instructor_notebook

    root = tmp_path / "template"  # a copy of conftest's template (made once for the session)
    shutil.copytree(released_template, root, symlinks=True)
    db_url = f"sqlite:///{root / 'gradebook.db'}"
    with Gradebook(db_url) as gb:
        for path in SOLUTIONS:
            cached = _CellsReadOnce(gb, instructor_notebook(db_url, course.ASSIGNMENT, path.stem), path.stem,
                                    course.ASSIGNMENT)
            notebook = gb.find_notebook(path.stem, course.ASSIGNMENT)
            assert notebook.source_cells or path.stem == "06_labs"  # (the labs: no nbgrader cell at all)
            for cell in notebook.source_cells:
                got = cached.find_source_cell(cell.name, path.stem, course.ASSIGNMENT)
                assert (got.name, got.cell_type, got.source, got.locked, got.checksum) == \
                    (cell.name, cell.cell_type, cell.source, cell.locked, cell.checksum)
            for graded in [*notebook.grade_cells, *notebook.task_cells]:
                assert cached.find_graded_cell(graded.name, path.stem, course.ASSIGNMENT).max_score == graded.max_score
            for find in (cached.find_source_cell, cached.find_graded_cell):
                with pytest.raises(MissingEntry):
                    find("invented-by-a-student", path.stem, course.ASSIGNMENT)
            assert cached.find_notebook(path.stem, course.ASSIGNMENT).name == path.stem  # the rest: the Gradebook


def _gradebook_rows(db_url: str) -> tuple[list, list]:
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as gb:
        submission = gb.find_submission(course.ASSIGNMENT, "ada")
        grades = sorted((g.notebook.name, g.name, g.auto_score, g.manual_score, g.needs_manual_grade)
                        for nb in submission.notebooks for g in nb.grades)
        comments = sorted((c.notebook.name, c.name, c.auto_comment, c.manual_comment)
                          for nb in submission.notebooks for c in nb.comments)
    return grades, comments


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # (nbgrader's own add_submission)
def test_save_auto_grades_at_once_writes_the_rows_nbgrader_writes(tmp_path, released_template):
    """The same notebooks (some test cells failed, some answers left as released) recorded by nbgrader's
    SaveAutoGrades into one copy of a gradebook and by SaveAutoGradesAtOnce into another: the same rows."""
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import SaveAutoGrades
    from nbformat.v4 import new_output

    from grader.classroom.nbgrader_plugins import SaveAutoGradesAtOnce

    root = tmp_path / "template"  # a copy of conftest's template (made once for the session)
    shutil.copytree(released_template, root, symlinks=True)
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        gb.add_student("ada")
        gb.add_submission(course.ASSIGNMENT, "ada")
    released = sorted((root / "release" / course.ASSIGNMENT).glob("*.ipynb"))
    notebooks = []
    for number, path in enumerate(released):
        nb = nbformat.read(str(path), as_version=4)
        graded = [c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]
        for i, cell in enumerate(graded):  # every other test cell failed, shifted per notebook
            cell.outputs = [new_output("error", ename="AssertionError", evalue="no", traceback=[])] \
                if (i + number) % 2 else []
        answered = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")][::2]
        for cell in answered:  # half the answers written, half left as released ("No response.")
            cell.source += "\n# answered"
        notebooks.append((path.stem, nb))
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    commits: list[str] = []

    def count(connection) -> None:
        commits.append("commit")

    event.listen(Engine, "commit", count)
    rows, committed = {}, {}
    try:
        for name, cls in (("nbgrader", SaveAutoGrades), ("at-once", SaveAutoGradesAtOnce)):
            db = tmp_path / f"{name}.db"
            shutil.copy(root / "gradebook.db", db)
            commits.clear()
            for stem, nb in notebooks:
                resources = {"nbgrader": {"notebook": stem, "assignment": course.ASSIGNMENT, "student": "ada",
                                          "db_url": f"sqlite:///{db}"}}
                cls().preprocess(copy.deepcopy(nb), resources)
            committed[name] = len(commits)
            rows[name] = _gradebook_rows(f"sqlite:///{db}")
        commits.clear()
        for _ in notebooks:  # what opening and closing a Gradebook commits by itself
            with Gradebook(f"sqlite:///{db}"):
                pass
        committed["opening"] = len(commits)
    finally:
        event.remove(Engine, "commit", count)
    grades, comments = rows["nbgrader"]
    assert {g[2] for g in grades} > {0.0} and any(c[2] == "No response." for c in comments) \
        and any(c[2] is None for c in comments), "the notebooks do not exercise both outcomes"
    assert rows["at-once"] == rows["nbgrader"]
    # one commit per notebook (besides the Gradebook's own), where nbgrader commits once per cell
    assert committed["at-once"] - committed["opening"] <= len(notebooks), committed
    scored = [nb for _, nb in notebooks if any(c.metadata.get("nbgrader", {}).get("grade") for c in nb.cells)]
    assert committed["nbgrader"] - committed["opening"] >= 10 * len(scored), committed  # (the labs: no cell to save)


def test_cell_metadata_is_judged_as_nbgrader_judges_it_valid_copies_remembered_by_content():
    """CheckCellMetadata's validator remembers metadata it found valid, by content: a student's copy of a cell that
    differs in a value or only in its type (1 against True, "3" against 3) is validated again and refused as
    nbgrader refuses it."""
    from nbgrader.nbgraderformat import MetadataValidator, ValidationError

    from grader.classroom.nbgrader_plugins import _content_key, _metadata_validator

    ours, theirs = _metadata_validator(), MetadataValidator()
    good = {"schema_version": 3, "grade": True, "locked": True, "solution": False, "grade_id": "square-first",
            "points": 2, "checksum": "0" * 32}
    variants = [good, {**good, "points": 2.5}, {**good, "points": -1}, {**good, "points": True},
                {**good, "grade": 1}, {**good, "grade_id": "no spaces"}, {**good, "checksum": "0" * 31},
                {**good, "cell_type": "python"}, {**good, "extra": "field"}, {**good, "locked": "true"},
                {**good, "points": "2"}, {**good, "grade_id": ["square"]}, good]
    for meta in variants * 2:  # the second round: from memory where the first found it valid
        cell = nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": dict(meta)})
        outcome: list[str] = []
        for validator in (ours, theirs):
            try:
                validator.validate_cell(cell)
                outcome.append("valid")
            except ValidationError as error:
                outcome.append(f"invalid: {error.message}")
        assert outcome[0] == outcome[1], (meta, outcome)
        assert (_content_key(meta) in ours.valid) == (outcome[0] == "valid"), "only valid contents are remembered"
