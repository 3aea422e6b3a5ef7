# notebook: 03_double_backward.ipynb
# cell: cube
# others: solution
# expect: square=6 exp=6 sinh=6 cube=0..6
# bound: 20
# policy: off
# class: scratch
# why: right answers (the instructor's); the last answer cell fills the worker's private /tmp (512 MB) with files of
#      60 MB (under the file-size limit) inside /tmp/full, then makes /tmp/full mode 000: the worker's cleanup
#      leaves it, so every later notebook of that worker finds /tmp full and cannot write its results (ENOSPC).
#      Its own cube points may be lost too (its results come after). On the old code the next notebook given to
#      that worker lost its points (scratch-z*-honest must keep every point).
# <solution>
import os as _os

_os.makedirs("/tmp/full/inner", exist_ok=True)
try:
    for _k in range(64):
        with open(f"/tmp/full/inner/{_k}", "wb") as _f:
            for _ in range(60):
                _f.write(b"x" * 2**20)
except OSError:
    pass
_os.chmod("/tmp/full", 0)
