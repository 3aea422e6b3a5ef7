"""The limits a notebook is graded under, one value for every way of grading it.

The time limit crosses the wall: the judge's side puts it in each task (``grader.judge.runner``, whether nbgrader's
``TrustedExecute`` or ``grader grade`` asked), the sandboxed worker stops the notebook when it is spent, the pool
waits that long plus a margin, and the verdict names it. Both sides read it here; nothing here imports anything.
"""

NOTEBOOK_SECONDS = 120.0  # wall time for a whole notebook, student cells and checks (a course notebook takes ~5 s)
