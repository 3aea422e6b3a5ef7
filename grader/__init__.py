"""Grading package of the autograd course.

- ``grader.checks``: the checks test cells call, one call per check (what is correct).
- ``grader.judge.diagnosis``: names the mistake behind a failed check (what went wrong, how to fix it).
- ``grader.spec.messages``: every sentence a student reads, in one table.
- ``grader.spec.exercises``: the exercises (reference ops, probe inputs, notebook sections).
- ``grader.basics``: the function-style checks of notebooks 1 and 4 as test cells call them
  (``basics.check_<name>``); their registry is ``grader.spec.functions``, their observer
  ``grader.sandboxed.observe_functions``, their judge ``grader.judge.functions``.
- ``grader.judge.runner`` / ``grader.classroom.cli``: run a notebook's code in a separate process and score it.

Importing this package is cheap (no nbgrader, no Jupyter) so that students'
self-checks answer quickly.
"""

__version__ = "0.1.0"
