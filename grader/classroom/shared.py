"""A shared teaching server: nbgrader's file-system exchange between the instructor's course and students' accounts.

    python -m grader.classroom.shared server [--course .] [--exchange /srv/nbgrader/exchange]     (make shared-server)
        the instructor's side: the course folder made private (root 711, instructor folders 700, gradebook 600)
        and the exchange folder created (1777, as nbgrader's docs ask: everyone writes, nobody removes another's)
    python -m grader.classroom.shared env [--prefix /opt/autograd-course] [--exchange ...]          (make shared-env)
        the students' side: a second venv at the prefix with the pinned dependencies and a copy of `grader`
        (not the editable one, which points into the private course folder), its nbgrader configured with the
        course id and the exchange (<prefix>/etc/jupyter/nbgrader_config.py, read by every nbgrader it runs),
        nbgrader's instructor extensions off, readable and runnable by everyone, writable by root only.

What nbgrader's docs recommend for several users on one machine ("Using nbgrader with JupyterHub", "Managing
assignment files"): one exchange folder everyone can write (default /srv/nbgrader/exchange), the course folder and
gradebook in the instructor's account only, and a system-wide nbgrader_config.py giving students the course id.

``PrivateCollect`` (nbgrader_config.py's ``ExchangeFactory.collect``) is nbgrader's collect, leaving each collected
submission 700/600 to the instructor: nbgrader copies the mode the student's submission had in the exchange (its
folder is 777 there), so another student could have written into it.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

COURSE_ID = "autograd-functions"  # nbgrader_config.py's CourseDirectory.course_id (a test checks they agree)
DEFAULT_EXCHANGE = "/srv/nbgrader/exchange"  # the course's (nbgrader 0.9.6's own is /usr/local/share/nbgrader/exchange)
EXCHANGE_FILE = ".exchange"  # in the course folder: the exchange make shared-server made, read by nbgrader_config.py
DEFAULT_PREFIX = "/opt/autograd-course"
REPO = Path(__file__).resolve().parents[2]  # grader/classroom/shared.py
# The oldest Python every package of requirements.lock accepts (its Requires-Python): soupsieve 4.1.2 asks for
# 3.11.5 (Debian 12's python3 is 3.11.2). The Makefile's check and the README say the same; a test recomputes it.
MINIMUM_PYTHON = (3, 11, 5)

# What stays reachable by other users in a private course folder (the root itself is 711: they may pass through,
# not list): the venv and the grader package, which the sandbox user must read to run student code, and the
# released notebooks (students get them from the exchange anyway). Everything else is the instructor's: 700/600.
SHARED_ENTRIES = (".venv", "grader", "notebooks")
# Folders nbgrader creates later (collect, autograde, feedback): created now, private, so that what nbgrader puts
# in them with its own modes stays out of reach.
INSTRUCTOR_FOLDERS = ("solutions", "submitted", "autograded", "feedback", "reports", "grader_results")


def say(text: str) -> None:
    print(text, flush=True)


def _private(path: Path) -> None:
    """``path`` (not what it links to) readable and writable by its owner only: 700 for a folder, 600 for a file."""
    if path.is_symlink():
        return
    mode = path.lstat().st_mode
    os.chmod(path, 0o700 if stat.S_ISDIR(mode) else (0o700 if mode & 0o100 else 0o600))


def make_private(root: Path) -> list[str]:
    """The course folder private: the root 711, every entry but ``SHARED_ENTRIES`` 700 (folders) or 600 (files),
    the instructor folders created if missing, an empty gradebook.db 600 if there is none (SQLite takes an empty
    file as a new database; nbgrader creates its tables in it, and SQLite's journal takes its mode). Returns what
    was changed, one line each."""
    root = root.resolve()
    changed = []
    for name in INSTRUCTOR_FOLDERS:
        if not (root / name).exists():
            (root / name).mkdir(mode=0o700)
            changed.append(f"{name}/ created (700)")
    grades = root / "grades.csv"  # nbgrader export's file: it rewrites an existing one, keeping its mode
    if not grades.exists():
        os.close(os.open(grades, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        changed.append("grades.csv created empty (600): nbgrader export fills it")
    gradebook = root / "gradebook.db"
    if not gradebook.exists() and not os.environ.get("GRADER_DB_URL", "").strip():
        os.close(os.open(gradebook, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        changed.append("gradebook.db created empty (600): nbgrader fills it")
    for entry in sorted(root.iterdir()):
        if entry.name in SHARED_ENTRIES or entry.is_symlink():
            continue
        before = stat.S_IMODE(entry.lstat().st_mode)
        _private(entry)
        after = stat.S_IMODE(entry.lstat().st_mode)
        if before != after:
            changed.append(f"{entry.name}{'/' if entry.is_dir() else ''} {before:o} -> {after:o}")
    before = stat.S_IMODE(root.stat().st_mode)
    os.chmod(root, 0o711)
    if before != 0o711:
        changed.append(f"{root} {before:o} -> 711")
    return changed


def _unreachable(path: Path) -> str:
    """The first folder on the way to ``path`` that other users cannot pass through; "" when there is none."""
    for parent in [*reversed(path.parents), path]:
        if parent.exists() and not parent.stat().st_mode & stat.S_IXOTH:
            return str(parent)
    return ""


def server(course: Path, exchange: Path) -> int:
    """``make shared-server``: the course private, the exchange created (1777) if missing."""
    course = course.resolve()
    if not (course / "nbgrader_config.py").is_file():
        say(f"error: {course} is not the course folder (no nbgrader_config.py): run this from the course's clone, "
            f"or give COURSE=<its folder>")
        return 2
    changed = make_private(course)
    say(f"course folder {course} made private (711; solutions/, submitted/, autograded/, feedback/, gradebook.db and "
        f"the rest the instructor's only; .venv/, grader/ and notebooks/ stay readable): "
        + ("; ".join(changed) if changed else "it already was"))
    if not exchange.exists():
        exchange.mkdir(parents=True)
        say(f"exchange folder {exchange} created")
    os.chmod(exchange, 0o1777)
    say(f"exchange folder {exchange}: 1777 (every student may write, nobody may remove another's files)")
    blocked = _unreachable(exchange)
    if blocked:
        say(f"warning: students cannot pass through {blocked} to reach the exchange {exchange}: chmod o+x it, or "
            f"choose an exchange elsewhere (EXCHANGE=/srv/nbgrader/exchange)")
    say("each submission nbgrader's submit writes into the exchange's inbound/ is 777 (nbgrader does so, for the "
        "instructor to remove it): hidden only by its random name in a folder students cannot list (2733); "
        "make autograde grades the copy nbgrader collect makes, which is the instructor's only (700/600)")
    homes = open_homes()
    say(_home_advice(homes) if homes else "home folders: none of the people's accounts can be entered by other users")
    record = course / EXCHANGE_FILE
    record.write_text(str(exchange.resolve()) + "\n", encoding="utf-8")
    os.chmod(record, 0o600)
    say(f"the course's nbgrader commands (release_assignment, collect, release_feedback, formgrader) use this exchange: "
        f"recorded in {record}, read by nbgrader_config.py"
        + ("" if exchange.resolve() == Path(DEFAULT_EXCHANGE) else
           f"; give the students' environment the same: make shared-env EXCHANGE={exchange}"))
    return 0


def _first_user_uid(login_defs: Path = Path("/etc/login.defs")) -> int:
    """UID_MIN of /etc/login.defs (where people's accounts start; 1000 by default)."""
    try:
        for line in login_defs.read_text(encoding="utf-8", errors="replace").splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] == "UID_MIN" and words[1].isdigit():
                return int(words[1])
    except OSError:
        pass
    return 1000


def open_homes(accounts: list[tuple[str, int, str]] | None = None, first_uid: int | None = None) -> list[tuple[str, Path, int]]:
    """(user, home, mode) of the people's accounts (uid from UID_MIN, not nobody) whose home folder others may enter
    or list: a student who knows the course's paths (~/autograd/...) reads another's work there."""
    import pwd

    first_uid = _first_user_uid() if first_uid is None else first_uid
    entries = accounts if accounts is not None else [(p.pw_name, p.pw_uid, p.pw_dir) for p in pwd.getpwall()]
    found = []
    for user, uid, home in entries:
        path = Path(home)
        if uid < first_uid or uid == 65534 or not home or path == Path("/") or not path.is_dir():
            continue
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o005:
            found.append((user, path, mode))
    return found


def _home_advice(homes: list[tuple[str, Path, int]]) -> str:
    shown = ", ".join(f"{user} {oct(mode)[2:]}" for user, _, mode in homes[:8]) + (" and more" if len(homes) > 8 else "")
    return (f"warning: {len(homes)} home folder(s) other users can enter ({shown}): another student reads the work "
            f"and the feedback kept there (~/autograd/). Make them private: chmod 700 "
            f"{' '.join(str(h) for _, h, _ in homes[:8])}{' ...' if len(homes) > 8 else ''}; and set HOME_MODE 0700 "
            "in /etc/login.defs before creating the next accounts (Debian's useradd makes them 755)")


def exchange_root(course: Path) -> str:
    """The course's exchange (nbgrader's ``Exchange.root``): ``GRADER_EXCHANGE`` when set, else the one
    ``make shared-server`` recorded in the course folder, else ``DEFAULT_EXCHANGE``. Never nbgrader's own default:
    the students' environment reads ``DEFAULT_EXCHANGE`` (or the one given to ``make shared-env``), so an instructor's
    plain ``nbgrader release_assignment`` released where no student looked ("Assignment not found")."""
    given = os.environ.get("GRADER_EXCHANGE", "").strip()
    if given:
        return given
    try:
        recorded = (course / EXCHANGE_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        recorded = ""
    return recorded or DEFAULT_EXCHANGE


# Students' kernels talk over Unix sockets in the student's own runtime folder (0700), not TCP: on a shared server
# another account can subscribe to a TCP kernel's output port on 127.0.0.1 and read what the notebook prints (the
# messages are signed, not encrypted); ipykernel warned "Kernel is running over TCP without encryption" on every
# validate. In nbgrader's configuration (validate) and the server's (JupyterLab's kernels).
KERNELS_OVER_IPC = (
    "import os as _os\n"
    "from jupyter_core.paths import jupyter_runtime_dir as _runtime\n"
    "_os.makedirs(_runtime(), mode=0o700, exist_ok=True)\n"
    "c.KernelManager.transport = 'ipc'  # kernels over Unix sockets in the student's runtime folder, not TCP\n"
    "c.KernelManager.ip = _os.path.join(_runtime(), 'kernel-ipc')\n")


def student_config(exchange: Path) -> str:
    return ("# Written by `make shared-env` (python -m grader.classroom.shared env): what every student's nbgrader needs.\n"
            "c = get_config()  # noqa: F821\n"
            f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
            f"c.Exchange.root = {str(exchange)!r}\n" + KERNELS_OVER_IPC)


def student_server_config() -> str:
    return ("# Written by `make shared-env`: the students' JupyterLab runs kernels over Unix sockets, not TCP.\n"
            "c = get_config()  # noqa: F821\n" + KERNELS_OVER_IPC)


def _run(argv: list[str], what: str) -> None:
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise SystemExit(f"error: {what} failed (exit {done.returncode}): {' '.join(argv)}\n{tail}")


def python_install(python: str) -> tuple[tuple[int, ...], list[Path]]:
    """``python``'s version, and what a venv made from it runs: its real executable and its standard library."""
    out = subprocess.run([python, "-c", "import os, sys, sysconfig; print(*sys.version_info[:3]); "
                          "print(os.path.realpath(getattr(sys, '_base_executable', sys.executable))); "
                          "print(os.path.realpath(sysconfig.get_path('stdlib')))"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    return tuple(int(v) for v in out[0].split()), [Path(out[1]), Path(out[2])]


def let_group_pass(group: str, paths: list[Path]) -> list[str]:
    """Let ``group`` search (not list) each folder on the way to ``paths`` that others cannot pass through (an ACL
    entry, as ``make install`` does for the sandbox user); returns those folders."""
    given: list[str] = []
    for path in paths:
        for folder in [*reversed(path.parents), path]:
            if str(folder) in given or not folder.is_dir() or folder.stat().st_mode & stat.S_IXOTH:
                continue
            done = subprocess.run(["setfacl", "-m", f"g:{group}:x", str(folder)], capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"error: could not let the group {group} pass through {folder}: "
                                 f"{done.stderr.strip() or 'setfacl failed'}")
            given.append(str(folder))
    return given


def env(prefix: Path, exchange: Path, python: str = sys.executable, group: str = "") -> int:
    """``make shared-env``: the students' venv at ``prefix`` (rebuilt if it is there), read-only for them. The
    Python it is made from must be one students can run: one that others can reach (/usr, /opt: nothing to do),
    or, with ``group`` (the students' Unix group), one whose folders that group is then let through."""
    prefix = Path(os.path.abspath(prefix))
    version, install = python_install(python)
    if version < MINIMUM_PYTHON:
        say(f"error: {python} is Python {'.'.join(map(str, version))}; requirements.lock needs "
            f"{'.'.join(map(str, MINIMUM_PYTHON))} or newer (soupsieve). Set PYTHON=<a newer python3>")
        return 2
    blocked = [f"{path} (at {_unreachable(path)})" for path in install if _unreachable(path)]
    if blocked and not group:
        say(f"error: students cannot run {python}: other users cannot reach {', '.join(blocked)}. Build the "
            f"environment from a Python installed where everyone can read it (PYTHON=/usr/local/bin/python3.12), or "
            f"give the students' Unix group (make shared-env GROUP=students, or --group) to let it pass through "
            f"those folders (search only, no listing: an ACL entry, as for the sandbox user)")
        return 2
    if blocked:
        passed = let_group_pass(group, install)
        for folder in passed:
            say(f"==> the group {group} may now pass through {folder} (search only, no listing) to reach the Python "
                f"the students' environment runs")
        if passed:
            say(f"    (an ACL entry on each; to take it back: setfacl -x g:{group} {' '.join(passed)})")
    if prefix.exists():
        if not (prefix / "pyvenv.cfg").is_file() or not (prefix / ".autograd-course-env").is_file():
            say(f"error: {prefix} exists and is not an environment made by make shared-env: remove it, or choose "
                f"another PREFIX=")
            return 2
        shutil.rmtree(prefix)
    old_umask = os.umask(0o022)  # everything readable by everyone, writable by its owner (root) only
    try:
        say(f"==> creating the students' environment {prefix} (pinned dependencies, a copy of grader; ~2 minutes)")
        _run([python, "-m", "venv", str(prefix)], "creating the venv")
        pip = [str(prefix / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
               "--no-deps"]
        _run([*pip, "-r", str(REPO / "requirements.lock")], "installing requirements.lock")
        # Not editable: an editable install would read grader/ from the instructor's (private) clone.
        _run([*pip, "--no-build-isolation", str(REPO)], "installing grader")
        _run([str(prefix / "bin" / "python"), "-m", "pip", "check"], "pip check")
        shutil.rmtree(REPO / "build", ignore_errors=True)  # setuptools' leftovers of the non-editable build
        config = prefix / "etc" / "jupyter"
        config.mkdir(parents=True, exist_ok=True)
        (config / "nbgrader_config.py").write_text(student_config(exchange), encoding="utf-8")
        (config / "jupyter_server_config.py").write_text(student_server_config(), encoding="utf-8")
        # Students do not grade: nbgrader's formgrader and Create Assignment off (as nbgrader's docs advise).
        _run([str(prefix / "bin" / "jupyter"), "server", "extension", "disable", "--sys-prefix",
              "nbgrader.server_extensions.formgrader"], "disabling formgrader")
        _run([str(prefix / "bin" / "jupyter"), "labextension", "disable", "--level=sys_prefix",
              "@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment"], "disabling formgrader's pages")
        (prefix / ".autograd-course-env").write_text("made by make shared-env\n", encoding="utf-8")
    finally:
        os.umask(old_umask)
    for folder, dirs, files in os.walk(prefix):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            if not path.is_symlink():
                mode = stat.S_IMODE(path.lstat().st_mode)
                os.chmod(path, (mode | 0o444 | (0o111 if mode & 0o100 or path.is_dir() else 0)) & ~0o022)
    os.chmod(prefix, 0o755)
    say(f"students' environment ready: {prefix}/bin/nbgrader, {prefix}/bin/grader, {prefix}/bin/jupyter lab; course "
        f"{COURSE_ID}, exchange {exchange}")
    blocked = _unreachable(prefix)
    if blocked:
        say(f"warning: students cannot pass through {blocked} to reach {prefix}: chmod o+x it, or choose PREFIX= "
            f"elsewhere (default {DEFAULT_PREFIX})")
    return 0


# --- nbgrader's collect, leaving submissions private -------------------------------------------------------------

try:
    from nbgrader.exchange.default.collect import ExchangeCollect as _ExchangeCollect
except ImportError:  # grader used without nbgrader (the students' checks): no collect to configure
    _ExchangeCollect = object  # type: ignore[assignment,misc]


class PrivateCollect(_ExchangeCollect):  # type: ignore[misc,valid-type]
    """nbgrader's collect; each collected submission 700 (folders) / 600 (files), and the folders above it in
    submitted/ 700: nbgrader's ``shutil.copytree`` keeps the exchange's modes (a submission folder is 777 there)."""

    def do_copy(self, src, dest, log=None):  # noqa: D102 (nbgrader's)
        super().do_copy(src, dest, log=log)
        dest = Path(dest)
        for folder, dirs, files in os.walk(dest):
            for name in files:
                if not os.path.islink(os.path.join(folder, name)):
                    os.chmod(os.path.join(folder, name), 0o600)
            os.chmod(folder, 0o700)
        submitted = Path(self.coursedir.root, self.coursedir.submitted_directory).resolve()
        for parent in dest.resolve().parents:
            if parent == submitted or submitted in parent.parents:
                os.chmod(parent, 0o700)
            if parent == submitted:
                break


# --- nbgrader's release_feedback, past submissions copied in by hand ------------------------------------------------

try:
    from nbgrader.exchange.default.release_feedback import ExchangeReleaseFeedback as _ExchangeReleaseFeedback
except ImportError:
    _ExchangeReleaseFeedback = object  # type: ignore[assignment,misc]


class HandInTolerantReleaseFeedback(_ExchangeReleaseFeedback):  # type: ignore[misc,valid-type]
    """nbgrader's release_feedback, except that a student whose submission did not come through the exchange (copied
    into submitted/ by hand, as docs/instructors.md allows) is left out with one line saying so, instead of
    nbgrader's ``FileNotFoundError`` (its ``timestamp.txt`` or ``submission_secret.txt``) ending the command before
    anyone's feedback was released. Such a student cannot ``fetch_feedback`` (the exchange files feedback under a hash of that secret):
    the line says to hand them their page."""

    def copy_files(self):  # noqa: D102 (nbgrader's)
        pattern = self.coursedir.format_path(self.coursedir.feedback_directory, "*", self.coursedir.assignment_id)
        if self.coursedir.student_id:
            pattern = self.coursedir.format_path(self.coursedir.feedback_directory, self.coursedir.student_id,
                                                 self.coursedir.assignment_id)
        left_out = []
        for folder in sorted(glob.glob(pattern)):
            missing = [name for name in ("timestamp.txt", "submission_secret.txt")
                       if not os.path.isfile(os.path.join(folder, name))]
            if missing:
                student = Path(folder).parent.name
                left_out.append(student)
                self.log.warning("feedback of %s not released: their submission was not collected through the "
                                 "exchange (no %s), so nbgrader fetch_feedback cannot find it; give them %s yourself",
                                 student, " or ".join(missing), folder)
        if left_out:
            before = self.coursedir.student_id_exclude
            self.coursedir.student_id_exclude = ",".join(filter(None, [before, *left_out]))
            try:
                super().copy_files()
            finally:
                self.coursedir.student_id_exclude = before
        else:
            super().copy_files()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.classroom.shared", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("server", help="make the course folder private and create the exchange (make shared-server)")
    s.add_argument("--course", type=Path, default=Path("."), help="the course folder (default: the current one)")
    s.add_argument("--exchange", type=Path, default=Path(DEFAULT_EXCHANGE),
                   help=f"nbgrader's exchange folder (default: the course's, {DEFAULT_EXCHANGE})")
    e = sub.add_parser("env", help="the students' read-only environment with grader and nbgrader (make shared-env)")
    e.add_argument("--prefix", type=Path, default=Path(DEFAULT_PREFIX), help=f"where (default {DEFAULT_PREFIX})")
    e.add_argument("--exchange", type=Path, default=Path(DEFAULT_EXCHANGE),
                   help=f"nbgrader's exchange folder (default: the course's, {DEFAULT_EXCHANGE})")
    e.add_argument("--python", default=sys.executable, help="the Python to build it with (default: this one)")
    e.add_argument("--group", default="", help="the students' Unix group, let through the folders on the way to a "
                                                "Python others cannot reach (an ACL entry)")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        say("note: not root: the files made here belong to you; students need them owned by someone they cannot "
            "impersonate (run it as root, or as the instructor's account)")
    if args.command == "server":
        return server(args.course, Path(os.path.abspath(args.exchange)))
    return env(args.prefix, Path(os.path.abspath(args.exchange)), python=args.python, group=args.group)


if __name__ == "__main__":
    sys.exit(main())
