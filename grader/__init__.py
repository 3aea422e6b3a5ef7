"""Grading package of the autograd course.

- ``grader.checks``, ``grader.basics``, ``grader.graphs``: what a notebook imports (the self-checks test cells call,
  the graph drawing); thin facades over the layers below.
- ``grader.spec``: what is correct and what is said: exercises, the one registry of checks, probes, references,
  findings and every sentence a student reads (``grader.spec.messages``).
- ``grader.boundary``: what crosses between the sandbox and the judge (wire format, channel, limits, fingerprint).
- ``grader.sandboxed``: what runs beside the student's code (worker, child, guard, observers, policy).
- ``grader.isolation``: starting and holding sandboxes (bubblewrap, seccomp, the pool, the Dask pool).
- ``grader.judge``: verdicts from observations (judges, diagnosis, test-cell parsing, the runner).
- ``grader.classroom``: nbgrader's plugins, autograde, the demo, the gradebook, the report, the CLI.

docs/design.md, "How the grader is built", has the picture and what each layer may import.

Importing this package is cheap (no nbgrader, no Jupyter) so that students'
self-checks answer quickly.
"""

__version__ = "0.1.0"


def speak(language: str) -> str:
    """Called by a translated notebook's set-up cell (``speak("zh")``): its self-checks answer in that language
    whatever runs the notebook; $GRADER_LANGUAGE still overrides. Returns the language they now speak."""
    from grader.spec import messages

    return messages.declare(language)
