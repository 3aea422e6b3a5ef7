"""nbgrader plugins of the course, named in ``nbgrader_config.py`` as ``grader.classroom.nbgrader_plugins.<Name>``.

One class per file in ``grader/classroom/plugins/``; this module names them all, so nbgrader_config.py (and an
instructor's own copy of it) keeps working. To change a plugin, edit its file; a test that replaces a module
attribute patches the module that uses it (e.g. ``plugins.trusted_execute._CLASSROOM``), not this one.
"""
from __future__ import annotations

from grader.classroom.plugins.cell_metadata import CheckCellMetadata, _content_key, _metadata_validator
from grader.classroom.plugins.exporter import SubmissionExporter, _ReadForThisCall
from grader.classroom.plugins.forget_cells import ForgetUnknownCells
from grader.classroom.plugins.harmless_warnings import silence_harmless_warnings
from grader.classroom.plugins.hidden_tests import HideHiddenTests
from grader.classroom.plugins.instructor import instructor_notebook, instructor_sources
from grader.classroom.plugins.long_lines import WrapLongLines
from grader.classroom.plugins.named_stubs import NamedStubs
from grader.classroom.plugins.overwrite_cells import OverwriteReleasedCells, _CellsReadOnce
from grader.classroom.plugins.save_grades import SaveAutoGradesAtOnce
from grader.classroom.plugins.submissions import MAX_NOTEBOOK_BYTES, UnreadableSubmission, read_submission
from grader.classroom.plugins.trusted_execute import GradingStopped, TrustedExecute, _Classroom, _Feeder, flags_text

__all__ = [
    "CheckCellMetadata", "ForgetUnknownCells", "GradingStopped", "HideHiddenTests", "MAX_NOTEBOOK_BYTES",
    "NamedStubs", "OverwriteReleasedCells", "SaveAutoGradesAtOnce", "SubmissionExporter", "TrustedExecute",
    "UnreadableSubmission", "WrapLongLines", "flags_text", "instructor_notebook", "instructor_sources",
    "read_submission", "silence_harmless_warnings",
    # read by tests
    "_CellsReadOnce", "_Classroom", "_Feeder", "_ReadForThisCall", "_content_key", "_metadata_validator",
]
