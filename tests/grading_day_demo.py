"""A grading day as an instructor sees it (issue 21's closing note): `.venv/bin/python tests/grading_day_demo.py [SECONDS]`
from the repository root builds a small class in a temporary course, runs make autograde, a FORCE=1 run interrupted
after SECONDS (default 25), make scores, a re-run and FORCE=1, and prints what the terminal shows."""
import os, signal, subprocess, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, "tests")
import nbformat
from test_grading_day import _course, _env
from grader.classroom import course

REPO = course.REPO
folder = Path(tempfile.mkdtemp(prefix="grading-day-")); os.chmod(folder, 0o755)
root = _course(folder / "course", {"ada": "autograd", "bob": "Autograd", "cleo": "autograd", "dan": "autograd",
                                   "eve": "autograd"}, slow="eve")
cleo = root / "submitted" / "cleo" / "autograd"
os.rename(cleo / "03_double_backward.ipynb", cleo / "03_double_backward (1).ipynb")
dan = root / "submitted" / "dan" / "autograd"
for name, gone in (("02_custom_function.ipynb", "linear"), ("03_double_backward.ipynb", "exp-structure")):
    nb = nbformat.read(str(dan / name), as_version=4)
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") != gone]
    nbformat.write(nb, str(dan / name))

def make(*args, interrupt_after=None):
    print(f"\n$ make {' '.join(args)}" + (f"   # Ctrl-C after {interrupt_after} s" if interrupt_after else ""), flush=True)
    p = subprocess.Popen(["make", "--no-print-directory", "-f", str(REPO / "Makefile"), *args], cwd=root,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=_env(), start_new_session=True)
    if interrupt_after:
        time.sleep(interrupt_after)
        os.killpg(p.pid, signal.SIGINT)
    out, _ = p.communicate(timeout=900)
    print(out.rstrip(), flush=True)

make("autograde")
make("autograde", "FORCE=1", interrupt_after=float(sys.argv[1]) if len(sys.argv) > 1 else 25)
make("scores")
make("autograde")
make("autograde", "FORCE=1")
print("\n(course folder:", root, ")")
