"""``grader.sandbox``, kept for ``python -m grader.sandbox``, nbgrader_config.py and existing imports: the code is
``grader.isolation.sandbox`` (this name is that module, not a copy)."""
import sys

if __name__ == "__main__":
    import runpy
    runpy.run_module("grader.isolation.sandbox", run_name="__main__", alter_sys=True)
else:
    from grader.isolation import sandbox as _real
    sys.modules[__name__] = _real
