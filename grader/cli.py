"""``grader.cli``, kept for ``python -m grader.cli``, nbgrader_config.py and existing imports: the code is
``grader.classroom.cli`` (this name is that module, not a copy)."""
import sys

if __name__ == "__main__":
    import runpy
    runpy.run_module("grader.classroom.cli", run_name="__main__", alter_sys=True)
else:
    from grader.classroom import cli as _real
    sys.modules[__name__] = _real
