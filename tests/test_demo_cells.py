"""Demonstration cells: the instructor's cells tagged ``demo`` (``runner.DEMO_TAG``) are not run when grading.

Notebook 4's training run (60 steps of WGAN-GP through the student's Functions, twice, and a figure) cost more than
half of that notebook's grading and scores nothing: the penalty's own checks grade it. A demo cell is skipped only
when it is byte-identical to a cell the instructor tagged (the tag is read from the instructor's notebooks, never
from the submission), its saved outputs are shown under a note in the notebook's language, and nothing after it
reads what it defines, so skipping it cannot change a score.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from grader.judge import runner
from grader.spec import messages, playground

ROOT = Path(__file__).resolve().parent.parent
SAVED = [{"output_type": "stream", "name": "stdout", "text": "loss: 0.912 at the start, -0.402 after 60 steps\n"}]


def _instructor(*sources: str, demo: int) -> nbformat.NotebookNode:
    cells = [nbformat.v4.new_code_cell(s) for s in sources]
    cells[demo].metadata["tags"] = [runner.DEMO_TAG]
    return nbformat.v4.new_notebook(cells=cells)


def _submission(*sources: str, tagged: tuple[int, ...] = ()) -> nbformat.NotebookNode:
    cells = []
    for k, source in enumerate(sources):
        cell = nbformat.v4.new_code_cell(source)
        cell.outputs = [nbformat.from_dict(o) for o in SAVED]
        if k in tagged:
            cell.metadata["tags"] = [runner.DEMO_TAG]
        cells.append(cell)
    return nbformat.v4.new_notebook(cells=cells)


SETUP, DEMO, AFTER = "x = 2", "print('training'); raise RuntimeError('the demo ran')", "y = x * 3\nprint(y)"


def test_only_the_instructors_tagged_cell_as_released_is_a_demo():
    instructor = _instructor(SETUP, DEMO, AFTER, demo=1)
    sources = runner.instructor_sources(instructor)
    assert sources.demos == {DEMO}
    cells = runner.cells_to_run(_submission(SETUP, DEMO, AFTER), {}, sources)
    assert [c.demo for c in cells] == [False, True, False]
    assert cells[1].saved[0]["text"] == SAVED[0]["text"] and cells[1].not_run
    # a tag the student adds to their copy of another cell changes nothing; an edited demo cell is the student's code
    tagged = runner.cells_to_run(_submission(SETUP, DEMO + "\n", AFTER, tagged=(0, 1, 2)), {}, sources)
    assert not any(c.demo for c in tagged) and tagged[1].restricted
    # without the instructor's notebooks nothing is a demo
    assert not any(c.demo for c in runner.cells_to_run(_submission(SETUP, DEMO, AFTER), {}))


def test_grading_does_not_run_a_demo_and_shows_its_saved_outputs_under_a_note():
    instructor = _instructor(SETUP, DEMO, AFTER, demo=1)
    cells = runner.cells_to_run(_submission(SETUP, DEMO, AFTER), {}, runner.instructor_sources(instructor))
    for language, word in (("en", "demonstration"), ("zh", "演示")):
        result = runner.grade_cells("demo", cells, "here", 60, allow_unsandboxed=True, language=language)
        shown = dict(result.outputs)
        note, *saved = shown[runner.outputs.source_key(DEMO)]
        with messages.using(language):
            assert note["text"] == "○ " + messages.say("demo_cell") + "\n" and word in note["text"]
        assert saved[0]["text"] == SAVED[0]["text"]
        # nothing here is scored, so nothing ran (runner: a notebook that scores nothing runs nothing): the cell after
        # the demo shows what the student saved, under the playground note; with a scored cell it runs
        # (test_the_courses_demo_cells_cannot_change_a_score, and the course's notebooks graded end to end)
        with messages.using(language):
            assert [o["text"] for o in shown[runner.outputs.source_key(AFTER)]] == [
                "○ " + messages.say("playground_cell") + "\n", SAVED[0]["text"]]
        assert not result.problem, result.problem


def _demo(cell) -> bool:
    return runner.DEMO_TAG in (cell.metadata.get("tags") or [])


@pytest.mark.parametrize("assignment", ["autograd", "autograd-zh"])
def test_the_courses_demo_cells_cannot_change_a_score(assignment):
    """Each demo cell of the course is the instructor's plain code (no nbgrader marker), and no cell after it that
    grading runs reads a name it binds: the rest of the notebook, the checks included, runs the same without it. A
    later demo cell may read it (notebook 6's labs build on their own earlier demos): grading skips both."""
    found = 0
    for path in sorted((ROOT / "solutions" / assignment).glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        for k, cell in enumerate(code):
            if not _demo(cell):
                continue
            found += 1
            assert not cell.metadata.get("nbgrader"), f"{path.name}: a demo cell is graded or an answer"
            binds = playground.names(cell.source).binds
            assert playground.EVERYTHING not in binds
            readers = [later.source.splitlines()[0] for later in code[k + 1:]
                       if not _demo(later) and playground.names(later.source).reads & binds]
            assert not readers, f"{path.name}: cells after the demo read what it defines: {readers}"
    assert found >= 1  # notebook 4's training run
