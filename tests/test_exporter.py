"""nbgrader's exporter for autograding (grader.nbgrader_plugins.SubmissionExporter) writes what nbconvert's
NotebookExporter writes, without its two costs per pass: a deep copy of a notebook read for that pass alone, and
the schema validation of the text written."""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest
from nbconvert.exporters import NotebookExporter

from grader import course
from grader.nbgrader_plugins import SubmissionExporter, _ReadForThisCall

SOLUTIONS = sorted((course.REPO / "solutions" / course.ASSIGNMENT).glob("*.ipynb"))


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_the_autograding_exporter_writes_what_nbconvert_writes(path: Path):
    nb = nbformat.read(str(path), as_version=4)
    nb.cells[0].setdefault("outputs", [])  # (a markdown cell: an invalid field, written all the same by both)
    ours, _ = SubmissionExporter().from_notebook_node(copy.deepcopy(nb), {})
    theirs, _ = NotebookExporter().from_notebook_node(copy.deepcopy(nb), {})
    assert ours == theirs


def test_a_notebook_read_for_one_export_is_handed_over_once_then_copied_as_usual():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    plain = copy.deepcopy(nb)
    assert copy.deepcopy(plain) is not plain
    owned = _ReadForThisCall.of(nb)
    assert copy.deepcopy(owned) is owned  # nbconvert's copy, which nobody else would have seen
    again = copy.deepcopy(owned)
    assert again is not owned and again == owned and type(again) is nbformat.NotebookNode
    again.cells[0].source = "y = 2"
    assert owned.cells[0].source == "x = 1"
