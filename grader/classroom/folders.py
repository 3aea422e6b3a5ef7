"""Where the course's things are: the repository (its solutions/), the assignment's name, nbgrader's log."""

from __future__ import annotations

from pathlib import Path



ASSIGNMENT = "autograd"


REPO = Path(__file__).resolve().parents[2]  # the repository (this file is grader/classroom/folders.py)


LOG_NAME = "nbgrader.log"  # in the course folder: nbgrader's full output, of the last command run
