"""A shared teaching server (docs/shared-server.md): nbgrader's file-system exchange between the
instructor's private course and real Unix student accounts, the students' read-only environment, the Python the
lock needs, and nbgrader commands run straight from the venv."""

from __future__ import annotations

import importlib.metadata
import os
import pwd
import secrets
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from conftest import remove_later
from grader.classroom import course, shared

REPO = course.REPO
VENV_BIN = Path(sys.executable).parent  # the course's venv (tests run with .venv/bin/python)
NOTEBOOK = "02_custom_function.ipynb"  # one notebook, one exercise (linear, 6 points): the quickest round trip
BARE_PATH = "/usr/bin:/bin"  # what a user's shell may have: not the venv


def _lock_minimum_python() -> tuple[int, int, int]:
    """The oldest Python 3.x.y every package pinned in requirements.lock accepts (their Requires-Python)."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    names = [line.split("==")[0] for line in (REPO / "requirements.lock").read_text().splitlines()
             if "==" in line and not line.startswith("#")]
    specifiers = [SpecifierSet(importlib.metadata.metadata(name).get("Requires-Python") or "")
                  for name in names]
    for minor in range(11, 20):
        for micro in range(0, 40):
            if all(Version(f"3.{minor}.{micro}") in s for s in specifiers):
                return (3, minor, micro)
    raise AssertionError("no Python 3.11-3.19 satisfies requirements.lock")


def test_the_python_check_asks_for_what_the_lock_needs():
    """soupsieve (in the lock) requires Python 3.11.5: the Makefile's check, pyproject and the README say so, and
    Debian 12's 3.11.2 is refused by make install before pip fails half-way."""
    needed = _lock_minimum_python()
    assert shared.MINIMUM_PYTHON == needed, needed
    dotted = ".".join(map(str, needed))
    makefile = (REPO / "Makefile").read_text()
    assert f"sys.version_info >= {needed}" in makefile, "the Makefile's Python check"
    assert f'requires-python = ">={dotted}"' in (REPO / "pyproject.toml").read_text()
    readme = (REPO / "README.md").read_text()
    assert f"Python {dotted}" in readme
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        assert "Python 3.11+" not in page.read_text(), page.name


def test_the_courses_nbgrader_commands_use_the_exchange_make_shared_server_made(tmp_path, monkeypatch):
    """Issue 30, blocker 1: nbgrader 0.9.6's own Exchange.root is /usr/local/share/nbgrader/exchange, the students'
    environment's is the course's: nbgrader_config.py now names the one make shared-server made (recorded in the
    course folder), GRADER_EXCHANGE overriding it, /srv/nbgrader/exchange before make shared-server ran."""
    from traitlets.config.loader import PyFileConfigLoader

    monkeypatch.delenv("GRADER_EXCHANGE", raising=False)
    root = tmp_path / "course"
    root.mkdir()
    shutil.copy(REPO / "nbgrader_config.py", root)

    def configured() -> str:
        return PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config().Exchange.root

    assert configured() == shared.DEFAULT_EXCHANGE
    assert shared.server(root, tmp_path / "exchange") == 0
    assert configured() == str((tmp_path / "exchange").resolve())
    assert stat.S_IMODE((root / shared.EXCHANGE_FILE).stat().st_mode) == 0o600
    monkeypatch.setenv("GRADER_EXCHANGE", "/srv/elsewhere")
    assert configured() == "/srv/elsewhere"


def test_make_shared_server_names_the_home_folders_other_students_can_enter(tmp_path, capsys):
    """Issue 30, item 8: Debian's useradd makes homes 755, and one student read another's work and feedback there;
    make shared-server now names them and says what to change."""
    homes = {}
    for name, mode in (("ana", 0o755), ("bo", 0o700), ("cy", 0o711), ("svc", 0o755)):
        homes[name] = tmp_path / name
        homes[name].mkdir()
        homes[name].chmod(mode)
    accounts = [("ana", 1001, str(homes["ana"])), ("bo", 1002, str(homes["bo"])), ("cy", 1003, str(homes["cy"])),
                ("svc", 999, str(homes["svc"])), ("nobody", 65534, "/nonexistent")]
    found = shared.open_homes(accounts, first_uid=1000)
    assert [(user, oct(mode)) for user, _, mode in found] == [("ana", "0o755"), ("cy", "0o711")]  # (cy: known paths)
    line = shared._home_advice(found)
    assert "2 home folder(s)" in line and f"chmod 700 {homes['ana']} {homes['cy']}" in line and "HOME_MODE 0700" in line
    root = tmp_path / "course"
    root.mkdir()
    shutil.copy(REPO / "nbgrader_config.py", root)
    assert shared.server(root, tmp_path / "exchange") == 0
    said = capsys.readouterr().out
    assert "home folder" in said and "777" in said  # (this machine's accounts, whatever they are: a line either way)


def test_the_shared_environment_sets_this_courses_id():
    assert f'c.CourseDirectory.course_id = "{shared.COURSE_ID}"' in (REPO / "nbgrader_config.py").read_text()
    assert f"course_id = {shared.COURSE_ID!r}" in shared.student_config(Path("/srv/x"))


def _course_copy(root: Path) -> Path:
    """A course with one notebook: nbgrader_config.py and solutions/autograd/02_custom_function.ipynb."""
    (root / "solutions" / course.ASSIGNMENT).mkdir(parents=True)
    shutil.copy2(REPO / "nbgrader_config.py", root / "nbgrader_config.py")
    shutil.copy2(REPO / "solutions" / course.ASSIGNMENT / NOTEBOOK, root / "solutions" / course.ASSIGNMENT / NOTEBOOK)
    return root


def _alembic_head() -> str:
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    config = Config()
    config.set_main_option("script_location", ALEMBIC_DIR)
    return ScriptDirectory.from_config(config).get_current_head()


def _modes(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder.parent)): (stat.S_IMODE(p.lstat().st_mode), p.lstat().st_uid)
            for p in [folder, *folder.rglob("*")]}


@pytest.mark.slow
def test_nbgrader_collect_from_the_venv_without_its_path_records_a_whole_gradebook(tmp_path):
    """`.venv/bin/nbgrader collect` with a PATH lacking .venv/bin (no make): nbgrader runs `alembic` when it creates
    the gradebook; it crashed ("No such file or directory: 'alembic'") leaving a gradebook with no alembic version.
    Now the gradebook is stamped with nbgrader's alembic head, and the collected submission, 777 in the exchange
    as nbgrader's submit leaves it, is the instructor's only (700 / 600)."""
    root = _course_copy(tmp_path / "course")
    exchange = tmp_path / "exchange"
    submission = exchange / shared.COURSE_ID / "inbound" / f"ann+{course.ASSIGNMENT}+2026-11-25 10:00:00.000000 UTC+x1"
    submission.mkdir(parents=True)
    (submission / "timestamp.txt").write_text("2026-11-25 10:00:00.000000 UTC")
    shutil.copy2(REPO / "notebooks" / course.ASSIGNMENT / NOTEBOOK, submission / NOTEBOOK)
    for path in submission.iterdir():
        path.chmod(0o666)
    submission.chmod(0o777)  # what nbgrader's submit leaves ("so the instructor can delete later")

    done = subprocess.run([str(VENV_BIN / "nbgrader"), "collect", course.ASSIGNMENT, f"--Exchange.root={exchange}",
                           "--CollectApp.check_owner=False"], cwd=root, capture_output=True, text=True, timeout=300,
                          env={"HOME": str(tmp_path), "PATH": BARE_PATH, "LANG": "C.UTF-8"})
    out = done.stdout + done.stderr
    assert done.returncode == 0 and "Traceback" not in out, out[-3000:]
    with sqlite3.connect(root / "gradebook.db") as db:
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [(_alembic_head(),)]
    collected = root / "submitted" / "ann" / course.ASSIGNMENT
    assert (collected / NOTEBOOK).is_file(), out[-3000:]
    modes = _modes(root / "submitted")
    assert all(uid == 0 or uid == os.geteuid() for _, uid in modes.values()), modes
    assert {mode for name, (mode, _) in modes.items() if (root / name).is_dir()} == {0o700}, modes
    assert {mode for name, (mode, _) in modes.items() if (root / name).is_file()} == {0o600}, modes


# --- the round trip with real student accounts -----------------------------------------------------------------


def _root_tools() -> None:
    """The test needs root (accounts, ACLs, the sandbox): CI runs as root; fail, never skip, when something lacks."""
    assert os.geteuid() == 0, "this test creates Unix accounts: run it as root (as make test does in CI)"
    missing = [tool for tool in ("useradd", "userdel", "groupadd", "groupdel", "runuser", "setfacl", "getfacl", "bwrap")
               if not shutil.which(tool)]
    assert not missing, f"missing programs: {missing} (make install installs acl and bubblewrap)"


@pytest.fixture
def accounts():
    """A Unix group and three student accounts with home folders, named with a random prefix; removed at the
    end whatever happens, with the ACL entries the students' environment gave their group."""
    _root_tools()
    prefix = f"ag{secrets.token_hex(3)}"
    group = f"{prefix}grp"
    names = {"correct": f"{prefix}ada", "wrong": f"{prefix}ben", "stub": f"{prefix}cy"}
    created: list[str] = []
    subprocess.run(["groupadd", group], check=True, capture_output=True)
    try:
        for name in names.values():
            subprocess.run(["useradd", "--create-home", "--no-user-group", "--gid", group, "--shell", "/bin/sh", name],
                           check=True, capture_output=True)
            created.append(name)
        yield group, names
    finally:
        for name in created:
            subprocess.run(["userdel", "--remove", name], capture_output=True)
        python_paths = shared.python_install(sys._base_executable)[1]  # type: ignore[attr-defined]
        for path in python_paths:
            for folder in [*path.parents, path]:
                if folder.is_dir():
                    subprocess.run(["setfacl", "-x", f"g:{group}", str(folder)], capture_output=True)
        subprocess.run(["groupdel", group], capture_output=True)
        assert not [n for n in created if subprocess.run(["id", n], capture_output=True).returncode == 0]


def _said(who: str, argv: list[str], done: subprocess.CompletedProcess) -> None:
    """With GRADER_TRANSCRIPT=<file>: each command of the round trip and what it printed, as its user saw it (the
    closing note of issue 30 shows one)."""
    path = os.environ.get("GRADER_TRANSCRIPT")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(f"\n{who}$ {' '.join(argv)}\n{(done.stdout + done.stderr).rstrip()}\n")


def _as(user: str, argv: list[str], cwd: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    home = f"/home/{user}"
    done = subprocess.run(["runuser", "-u", user, "--", "env", "-i", f"HOME={home}", f"PATH={BARE_PATH}",
                           "LANG=C.UTF-8", f"USER={user}", *argv], cwd=cwd or home, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)
    _said(user, argv, done)
    return done


def _ok(done: subprocess.CompletedProcess, what: str) -> str:
    out = done.stdout + done.stderr
    assert done.returncode == 0, f"{what} failed (exit {done.returncode}):\n{out[-4000:]}"
    return out


def _instructor(argv: list[str], root: Path, timeout: float = 600) -> str:
    done = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PATH": BARE_PATH, "PYTHONPATH": ""})
    _said("instructor", argv, done)
    return _ok(done, " ".join(argv[:3]))


@pytest.fixture
def shared_folder():
    """A scratch folder students can pass through (pytest's tmp_path is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="autograd-shared-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    # (it holds the students' venv, some 80,000 files: rm removes them in half the time shutil.rmtree takes, and in
    # a process of its own while this test process runs its next tests: conftest waits for it at the session's end)
    remove_later(folder)


@pytest.mark.slow
def test_a_shared_server_round_trip_with_three_student_accounts(accounts, shared_folder):
    """make shared-server and make shared-env, then nbgrader's exchange as its docs describe: release, three real
    student accounts fetch (the course id and exchange come from their environment), one validates, all submit;
    collect, autograde, feedback released and fetched. Scores are right (correct 6/6, wrong 1/6 with its diagnosis
    in the feedback it fetched, stub 0/6), and no student can read solutions/, the gradebook or another's collected
    submission, nor write into it, while the released notebooks stay readable."""
    group, students = accounts
    root = _course_copy(shared_folder / "course")
    exchange = shared_folder / "exchange"
    prefix = shared_folder / "env"
    nbgrader = str(VENV_BIN / "nbgrader")
    make = ["make", "--no-print-directory", "-C", str(REPO)]

    nbgraders_default = Path("/usr/local/share/nbgrader/exchange")  # nbgrader 0.9.6's own Exchange.root
    existed = nbgraders_default.exists()
    out = _instructor([*make, "shared-server", f"COURSE={root}", f"EXCHANGE={exchange}"], REPO)
    assert "made private" in out and str(root / shared.EXCHANGE_FILE) in out, out
    # make shared-env (a venv with the whole lock: most of this test's time) runs while the instructor generates and
    # releases the assignment: neither reads or writes what the other does (the students' environment at PREFIX; the
    # course folder and the exchange), and the students fetch only once both are done, as before.
    # (With GRADER_TRANSCRIPT, make shared-env's lines come after the release's: each is written when it ends.)
    with ThreadPoolExecutor(max_workers=1) as background:
        env_made = background.submit(_instructor, [*make, "shared-env", f"PREFIX={prefix}", f"EXCHANGE={exchange}",
                                                   f"GROUP={group}", f"PYTHON={sys._base_executable}"],  # type: ignore[attr-defined]
                                     REPO, timeout=900)
        _instructor([nbgrader, "generate_assignment", course.ASSIGNMENT], root)  # the gradebook, from solutions/
        _instructor([nbgrader, "release_assignment", course.ASSIGNMENT], root)  # as docs/shared-server.md says
        out = env_made.result()
    assert "students' environment ready" in out, out
    assert not [p for p in [prefix, *prefix.rglob("*")] if not p.is_symlink() and p.lstat().st_mode & 0o022], \
        "the students' environment is writable by others than root"

    answers = {"correct": course.answer_sources(root / "solutions" / course.ASSIGNMENT)["linear"],
               "wrong": course.mistake_source(REPO / "examples" / "mistakes" / "linear-transposed-grad-weight.py")}
    for kind, user in students.items():
        _ok(_as(user, [f"{prefix}/bin/nbgrader", "fetch_assignment", course.ASSIGNMENT]), f"{kind}: fetch")
        fetched = Path(f"/home/{user}/{course.ASSIGNMENT}/{NOTEBOOK}")
        assert fetched.is_file()
        if kind in answers:  # the student writes an answer (the stub student hands in the notebook as fetched)
            nb = nbformat.read(str(fetched), as_version=4)
            [cell] = [c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "linear"]
            cell.source = answers[kind]
            nbformat.write(nb, str(fetched))
            os.chown(fetched, pwd.getpwnam(user).pw_uid, -1)
    validated = _as(students["wrong"], [f"{prefix}/bin/nbgrader", "validate", f"{course.ASSIGNMENT}/{NOTEBOOK}"])
    assert "is transposed" in validated.stdout + validated.stderr, (validated.stdout + validated.stderr)[-4000:]
    assert "without encryption" not in validated.stdout + validated.stderr  # (kernels over the student's Unix sockets)
    for kind, user in students.items():
        _ok(_as(user, [f"{prefix}/bin/nbgrader", "submit", course.ASSIGNMENT]), f"{kind}: submit")

    _instructor([nbgrader, "collect", course.ASSIGNMENT], root)  # as docs/shared-server.md says
    # one more student's notebook copied into submitted/ by hand (docs/instructors.md allows it): no submission
    # secret, so nbgrader's release_feedback stopped for everyone at it (issue 30); now it is left out, said once
    by_hand = root / "submitted" / "by-hand" / course.ASSIGNMENT
    by_hand.mkdir(parents=True)
    shutil.copy(root / "submitted" / students["correct"] / course.ASSIGNMENT / NOTEBOOK, by_hand / NOTEBOOK)
    for user in students.values():
        modes = _modes(root / "submitted" / user)
        assert {m for name, (m, _) in modes.items() if (root / "submitted" / name).is_dir()} == {0o700}, modes
        assert {m for name, (m, _) in modes.items() if (root / "submitted" / name).is_file()} == {0o600}, modes
        assert {uid for _, uid in modes.values()} == {0}, modes
    _instructor([str(VENV_BIN / "python"), "-m", "grader.classroom.course", "autograde"], root, timeout=900)
    scores = course.gradebook_scores(f"sqlite:///{root / 'gradebook.db'}")
    assert {kind: scores[user]["linear"] for kind, user in students.items()} == \
        {"correct": (6, 6), "wrong": (1, 6), "stub": (0, 6)}, scores
    assert scores["by-hand"]["linear"] == (6, 6), scores
    _instructor([nbgrader, "generate_feedback", course.ASSIGNMENT], root)
    out = _instructor([nbgrader, "release_feedback", course.ASSIGNMENT], root)  # as docs/shared-server.md says
    assert "feedback of by-hand not released" in out and "give them" in out, out[-3000:]
    pages = {}
    for kind, user in students.items():
        _ok(_as(user, [f"{prefix}/bin/nbgrader", "fetch_feedback", course.ASSIGNMENT]), f"{kind}: fetch_feedback")
        [page] = Path(f"/home/{user}/{course.ASSIGNMENT}/feedback").glob(f"*/{NOTEBOOK.replace('.ipynb', '.html')}")
        pages[kind] = page.read_text(encoding="utf-8")
    assert "is transposed" in pages["wrong"] and "is transposed" not in pages["correct"]
    assert nbgraders_default.exists() == existed, "an instructor's command used nbgrader's own exchange (issue 30)"

    # the class's grades and diagnoses, written after make shared-server (issue 30: they were 755/644 then)
    _instructor([str(VENV_BIN / "python"), "-m", "grader.classroom.report", "--root", str(root)], root, timeout=600)
    _instructor([nbgrader, "export"], root)
    assert "linear" in (root / "grades.csv").read_text() or (root / "grades.csv").stat().st_size > 0

    # What a student may and may not do in the instructor's course folder.
    intruder, victim = students["stub"], students["correct"]
    released = root / "notebooks" / course.ASSIGNMENT / NOTEBOOK
    assert _as(intruder, ["cat", str(released)]).returncode == 0, "the released notebooks stay readable"
    for secret in [root / "solutions" / course.ASSIGNMENT / NOTEBOOK, root / "gradebook.db",
                   root / "submitted" / victim / course.ASSIGNMENT / NOTEBOOK,
                   root / "autograded" / victim / course.ASSIGNMENT / NOTEBOOK,
                   root / "reports" / "scores.csv", root / "reports" / "class-report.html", root / "grades.csv",
                   root / "grader_results" / course.ASSIGNMENT / victim / NOTEBOOK.replace(".ipynb", ".json")]:
        assert secret.is_file()
        done = _as(intruder, ["cat", str(secret)])
        assert done.returncode != 0 and "Permission denied" in done.stderr, (secret, done.stdout[:200], done.stderr)
    for target in [root / "submitted" / victim / course.ASSIGNMENT / "planted.txt",
                   root / "submitted" / victim / course.ASSIGNMENT / NOTEBOOK]:
        done = _as(intruder, ["sh", "-c", f"echo x >> '{target}'"])
        assert done.returncode != 0 and "Permission denied" in done.stderr, (target, done.stderr)
    assert not (root / "submitted" / victim / course.ASSIGNMENT / "planted.txt").exists()
    assert stat.S_IMODE(root.stat().st_mode) == 0o711
    assert stat.S_IMODE((root / "gradebook.db").stat().st_mode) == 0o600
    assert {stat.S_IMODE((root / name).stat().st_mode) for name in shared.INSTRUCTOR_FOLDERS} == {0o700}

