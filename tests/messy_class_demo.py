"""A messy class of 17 students graded end to end, as an instructor's terminal shows it (issue 30's closing note):
`.venv/bin/python tests/messy_class_demo.py` from the repository root builds the class in a temporary course, then
runs make roster, make due, make extension, make autograde (both languages), make scores, make export and make report,
printing what each says, then the export files.

The class: right answers saved by Colab (nbformat 4.0) and old Jupyter (4.4); a folder named Autograd/; a notebook
renamed by a browser ("03_double_backward (1).ipynb"); a Chinese student under autograd-zh/ and one who handed the
Chinese notebooks in under autograd/; one late (10 % a day), one late within an extension, one on time; one
with a notebook missing; one who edited a test cell; a file that is not a notebook; an empty notebook; a blank
(untouched) submission; two enrolled students who handed in nothing; one student not on the class list.
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, "tests")
import nbformat  # noqa: E402

from conftest import SOLUTIONS  # noqa: E402
from test_grading_day import _course, _env  # noqa: E402
from test_ungradable import _as_saved_by  # noqa: E402
from grader.classroom import course  # noqa: E402

REPO = course.REPO
ZH = REPO / "notebooks" / "autograd-zh"
folder = Path(tempfile.mkdtemp(prefix="messy-class-"))
os.chmod(folder, 0o755)
honest = {s: "autograd" for s in ("ada", "ben", "cat", "dee", "eli", "fay", "gus", "hal", "ivy", "kim", "lou")}
root = _course(folder / "course", {**honest, "bob": "Autograd"})
sub = root / "submitted"
answers = course.answer_sources(SOLUTIONS)
course.build_submission(ZH, answers, sub / "mei" / "autograd-zh")  # the Chinese notebooks, where they belong
course.build_submission(ZH, answers, sub / "wen" / "autograd")  # the Chinese notebooks under autograd/
for name in ("01_autograd_basics.ipynb", "02_custom_function.ipynb"):  # Colab's downloads, old Jupyter's saves
    path = sub / "ada" / "autograd" / name
    path.write_bytes(_as_saved_by(path.read_bytes(), "colab"))
    path = sub / "ben" / "autograd" / name
    path.write_bytes(_as_saved_by(path.read_bytes(), "jupyter-4.4"))
os.rename(sub / "cat" / "autograd" / "03_double_backward.ipynb", sub / "cat" / "autograd" / "03_double_backward (1).ipynb")
(sub / "dee" / "autograd" / "04_modern_functions.ipynb").unlink()
nb = nbformat.read(str(sub / "eli" / "autograd" / "02_custom_function.ipynb"), as_version=4)
for cell in nb.cells:  # eli "fixed" a test cell to always pass
    if cell.metadata.get("nbgrader", {}).get("grade") and not cell.metadata["nbgrader"].get("solution"):
        cell.source = "pass  # it works on my machine"
        break
nbformat.write(nb, str(sub / "eli" / "autograd" / "02_custom_function.ipynb"))
(sub / "fay" / "autograd" / "01_autograd_basics.ipynb").write_text("I could not get Jupyter to start, sorry\n")
(sub / "gus" / "autograd" / "02_custom_function.ipynb").write_text("")
for name in os.listdir(sub / "hal" / "autograd"):  # hal handed in the release, untouched
    (sub / "hal" / "autograd" / name).write_bytes((REPO / "notebooks" / "autograd" / name).read_bytes())
for student, when in (("ivy", "2026-12-02 18:00:00.000000 UTC"), ("kim", "2026-12-02 10:00:00.000000 UTC"),
                      ("lou", "2026-12-01 12:00:00.000000 UTC")):
    (sub / student / "autograd" / "timestamp.txt").write_text(when + "\n")
roster = root / "students.csv"  # Canvas's export: everyone but "zed" (not on the list), plus nia and oli (nothing)
enrolled = [s for s in [*honest, "bob", "mei", "wen"]] + ["nia", "oli"]
roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section\n    Points Possible,,,,\n"
                  + "".join(f'"{s.title()}son, {s.title()}",{100 + i},,{s},A\n' for i, s in enumerate(enrolled)))
course.build_submission(REPO / "notebooks" / "autograd", answers, sub / "zed" / "autograd")
(root / "deadlines.toml").write_text('[late]\npenalty = "per_day"\npercent_per_day = 10\n')


def make(*args: str) -> None:
    print(f"\n$ make {' '.join(args)}", flush=True)
    done = subprocess.run(["make", "--no-print-directory", "-f", str(REPO / "Makefile"), *args], cwd=root,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=_env(), timeout=1200)
    print(done.stdout.rstrip(), flush=True)


make("roster", f"CSV={roster}")
make("due", "DUE=2026-12-01 23:59 +08:00")
make("extension", "STUDENT=kim", "EXTENSION=1 day")
make("autograde")
make("autograde", "ASSIGNMENT=autograd-zh")
make("scores")
make("export")
make("report")
for name in ("grades.csv", "canvas.csv", "moodle.csv"):
    print(f"\n$ cat exports/{name}\n" + (root / "exports" / name).read_text().rstrip())
print(f"\n$ cat reports/flags.csv\n" + (root / "reports" / "flags.csv").read_text().rstrip())
print("\n(course folder:", root, ")")
