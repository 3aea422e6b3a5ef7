# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=6 exp=6 sinh=6 cube=6
# bound: 20
# policy: off
# class: scratch
# why: right answers (the instructor's) that also leave a folder of mode 000 (with a file inside) in the
#      notebook's own folder (/tmp/notebook, its working directory). The worker's cleanup (rmtree, errors ignored)
#      cannot remove it, and the next notebook's os.mkdir('/tmp/notebook') fails: on the old code the worker
#      died on it and the next notebook given to that worker scored 0 (scratch-z*-honest must keep every point).
# <solution>
import os as _os

_os.makedirs("trap/inner", exist_ok=True)
with open("trap/inner/left", "w") as _f:
    _f.write("x")
_os.chmod("trap", 0)
