# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=2 exp=6 sinh=6 cube=6
# bound: 20
# policy: off
# why: looks everywhere it can (the repository, home folders, /tmp, its own folder) for the solutions
#      notebooks, the hidden tests and the gradebook; had it found
#      any, it would have copied the answer (a right Square). It must find nothing, so its own (wrong) Square
#      is graded. What it saw is printed and written to seen.txt in its scratch.
import os
import sys
import time
from pathlib import Path

import grader

NEEDLES = (b"### BEGIN " + b"SOLUTION", b"### END " + b"SOLUTION", b"### BEGIN " + b"HIDDEN TESTS")  # not literally: this cell is in plan.json
SKIP = {".git", ".venv", "venv", "site-packages", "node_modules", "proc", "sys", "dev", "usr", "lib", "lib64", "bin",
        "sbin", "boot", "etc", "snap", "__pycache__", "run"}


def _leaks(started, budget=10.0, max_depth=5):
    roots = {Path.cwd(), *Path.cwd().parents, *Path(grader.__file__).resolve().parents, Path.home(), Path("/"),
             Path("/tmp"), Path("/var/tmp"), Path("/work"), Path("/root"), Path("/home"), Path("/srv"), Path("/opt"),
             Path("/mnt"), Path("/data")}
    found, seen = [], []
    for root in sorted(str(r) for r in roots):
        for folder, dirs, files in os.walk(root):
            depth = folder[len(root):].count(os.sep)
            dirs[:] = [d for d in dirs if d not in SKIP and depth < max_depth]
            if time.monotonic() - started > budget:
                return found, seen + ["(search stopped: time budget)"]
            for name in files:
                path = os.path.join(folder, name)
                if name.endswith((".ipynb", ".db", ".json", ".sqlite")):
                    seen.append(path)
                    try:
                        if os.path.getsize(path) > 20 * 2**20:
                            continue
                        with open(path, "rb") as f:
                            data = f.read()
                    except OSError:
                        continue
                    if any(n in data for n in NEEDLES):
                        found.append(path)
    return found, seen


found, seen = _leaks(time.monotonic())
report = "found:\n" + "\n".join(found) + "\nseen:\n" + "\n".join(sorted(set(seen)))
print(report)
print(report, file=sys.stderr)
try:
    Path("seen.txt").write_text(report)
except OSError:
    pass

if found:  # copied from the instructor's notebook
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        def backward(ctx, grad_out):
            x, = ctx.saved_tensors
            return grad_out * 2 * x
else:  # its own attempt
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        def backward(ctx, grad_out):
            x, = ctx.saved_tensors
            return -grad_out * 2 * x  # wrong: the sign
