"""``grader.nbgrader_job``, kept for ``python -m grader.nbgrader_job``, nbgrader_config.py and existing imports: the code is
``grader.classroom.nbgrader_job`` (this name is that module, not a copy)."""
import sys

if __name__ == "__main__":
    import runpy
    runpy.run_module("grader.classroom.nbgrader_job", run_name="__main__", alter_sys=True)
else:
    from grader.classroom import nbgrader_job as _real
    sys.modules[__name__] = _real
