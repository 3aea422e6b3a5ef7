"""Grading package of the autograd course.

- ``grader.checks``: the checks test cells call, one call per check (what is correct).
- ``grader.judge.diagnosis``: names the mistake behind a failed check (what went wrong, how to fix it).
- ``grader.spec.messages``: every sentence a student reads, in one table.
- ``grader.spec.exercises``: the exercises (reference ops, probe inputs, notebook sections).
- ``grader.basics``: checks for the autograd-basics exercises of notebook 1, and the registry of every
  function-style check (test cells call ``basics.check_<name>``).
- ``grader.secondorder``: notebook 4's Hessian-vector product and gradient-penalty checks (registered in basics).
- ``grader.judge.runner`` / ``grader.classroom.cli``: run a notebook's code in a separate process and score it.

Importing this package is cheap (no nbgrader, no Jupyter) so that students'
self-checks answer quickly.
"""

__version__ = "0.1.0"
