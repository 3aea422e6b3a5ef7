"""``grader.report``, kept for ``python -m grader.report``, nbgrader_config.py and existing imports: the code is
``grader.classroom.report`` (this name is that module, not a copy)."""
import sys

if __name__ == "__main__":
    import runpy
    runpy.run_module("grader.classroom.report", run_name="__main__", alter_sys=True)
else:
    from grader.classroom import report as _real
    sys.modules[__name__] = _real
