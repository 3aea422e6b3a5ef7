"""Run untrusted code under bubblewrap, with limits, and leave nothing behind.

What a sandboxed program gets:
- an allowlist of host folders, read-only: the system (/usr, /etc), the venv, the Python install and the
  grader package (at their real paths and at the paths the grader sees them by); nothing else of the host:
  no course, solutions, gradebook, home folders or other checkouts. The sandbox's own root and /dev are
  read-only too; the only writable places are a size-limited private /tmp, a small /dev/shm and, for
  ``run``, the scratch folder it is given;
- an unprivileged host identity: started by root, bubblewrap itself runs as the ``grader-sandbox`` user (or
  nobody), so files only root may read stay unreadable and /proc/sys stays read-only inside;
- a seccomp filter (``grader.isolation.syscalls``): no ptrace or other way into another process, no threads, no new
  namespaces or mounts;
- no network (a new, empty network namespace), its own pid namespace (everything it starts dies with it);
- limits: wall time, address space (RLIMIT_AS), file size, and where cgroup v1 is writable, a pids.max and a
  memory limit for the whole tree; its stdout/stderr are read through a capped pipe.

Where bwrap cannot start, ``available()`` says why, and callers refuse untrusted code unless told otherwise.
"""

from __future__ import annotations

import itertools
import os
import pwd
import resource
import shutil
import signal
import site
import subprocess
import sys
import sysconfig
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader.boundary import fingerprint, mounts
from grader.boundary.limits import NOTEBOOK_SECONDS

CGROUP_ROOT = Path("/sys/fs/cgroup")
NOBODY = 65534
SANDBOX_USER = "grader-sandbox"  # created by `make install` when run as root; else nobody is used
SHM_BYTES = 16 * 2**20  # /dev/shm inside a sandbox
TRUSTED_GRADER = "/opt/grader-trusted"  # where the trusted side's own grader package is mounted inside
_counter = itertools.count()


@dataclass(frozen=True)
class Limits:
    wall_seconds: float = NOTEBOOK_SECONDS
    memory_bytes: int = 4 * 2**30  # torch's import alone maps ~2 GB of address space
    processes: int = 64
    output_bytes: int = 1_000_000
    file_bytes: int = 64 * 2**20


@dataclass
class Outcome:
    returncode: int | None
    output: str
    seconds: float
    stopped: str = ""  # "", "timeout", "output", "memory", "worker", "channel": why the program was stopped
    limits: Limits = field(default_factory=Limits)

    @property
    def reason(self) -> str:
        from grader.spec.messages import say

        if self.stopped == "timeout":
            return say("reason_timeout", seconds=self.limits.wall_seconds)
        if self.stopped == "output":
            return say("reason_output", limit=self.limits.output_bytes)
        if self.stopped == "memory":
            return say("reason_memory", gib=self.limits.memory_bytes / 2**30)
        if self.stopped == "worker":
            return say("reason_worker")
        if self.stopped == "channel":
            return say("reason_channel")
        return say("reason_exit", code=self.returncode) if self.returncode else ""


class SandboxUnavailable(RuntimeError):
    pass


class SetupError(RuntimeError):
    """The grading environment itself is broken (not the student's fault): stop, say why, record nothing."""


def host_identity() -> tuple[int, int] | None:
    """The (uid, gid) bubblewrap runs as on the host: an unprivileged user when we are root; None when we
    already are unprivileged (then the sandbox runs as ourselves)."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(SANDBOX_USER)
        return entry.pw_uid, entry.pw_gid
    except KeyError:
        return NOBODY, NOBODY


def _popen_identity() -> dict[str, object]:
    """subprocess.Popen arguments that drop root for the sandbox (done in C after fork: safe with threads)."""
    identity = host_identity()
    if identity is None:
        return {}
    return {"user": identity[0], "group": identity[1], "extra_groups": []}


def package_fingerprint(folder: Path | None = None) -> str:
    """A digest of the grader package's sources: the sandbox must run exactly the code the trusted side runs.
    Without ``folder``: this package's, as it was when this process imported it."""
    if folder is None:
        return _IMPORTED_FINGERPRINT
    return fingerprint.digest(folder).hex()[:16]


_IMPORTED_FINGERPRINT = package_fingerprint(fingerprint.PACKAGE)


_WORKED: set[tuple[object, ...]] = set()  # the set-ups available() found working in this process


def available() -> tuple[bool, str]:
    """(True, "") when bubblewrap can start a sandbox here, as the user it will run as; else (False, why).
    A set-up found working is not probed again in this process (the probes start four processes: about 0.1 s
    before the first worker could start, asked three times on the way to grading); a failure is probed each time."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False, "bubblewrap (bwrap) is not installed: run `make install` (Debian package bubblewrap)"
    paths = (*default_exposed(), trusted_package())
    key = (bwrap, host_identity(), paths, tuple(_system_mounts()))
    if key in _WORKED:
        return True, ""
    ok, why = _probe(bwrap, paths)
    if ok:
        _WORKED.add(key)
    return ok, why


def _probe(bwrap: str, paths: tuple[Path, ...]) -> tuple[bool, str]:
    try:
        from grader.isolation import syscalls

        syscalls.compiled()
    except Exception as exc:  # SeccompUnavailable, or a libseccomp that cannot compile the policy
        return False, str(exc)
    identity = host_identity()
    for path in paths:
        unreadable = _unreadable_by(path, identity)
        if unreadable:
            who = f"the sandbox user (uid {identity[0]})" if identity else "this user"
            return False, (f"{who} cannot read {unreadable}, which the sandbox needs ({path}): make the folders "
                           f"on that path readable and searchable by others (chmod o+rx), or keep the course and its "
                           f".venv outside a private folder such as /root")
    try:
        done = subprocess.run([bwrap, *_system_mounts(), "--unshare-all", "--unshare-user", "--disable-userns",
                               "--die-with-parent", "--", "true"],
                              capture_output=True, text=True, timeout=20, **_popen_identity())  # type: ignore[arg-type]
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bwrap could not start: {exc}"
    if done.returncode != 0:
        return False, f"bwrap could not create namespaces here: {done.stderr.strip() or done.returncode}"
    return True, ""


def _unreadable_by(path: Path, identity: tuple[int, int] | None) -> str:
    """The first folder on ``path`` the sandbox's host user cannot search (or, for ``path``, read), or "".
    Asked of the kernel as that user, so ACLs count (``make install`` grants the sandbox user search rights)."""
    folders = [*reversed(path.parents), path]
    script = 'for p in "$@"; do if [ "$p" = "$0" ]; then [ -r "$p" ] && [ -x "$p" ] || { echo "$p"; exit; }; ' \
             'else [ -x "$p" ] || { echo "$p"; exit; }; fi; done'
    try:
        done = subprocess.run(["/bin/sh", "-c", script, str(path), *map(str, folders)], capture_output=True,
                              text=True, timeout=10, **({"user": identity[0], "group": identity[1], "extra_groups": []}
                                                        if identity else {}))  # type: ignore[arg-type]
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{path} ({exc})"
    return done.stdout.strip()


class _Cgroups:
    """A pids and a memory cgroup (v1) for one sandboxed tree, when the controllers are writable."""

    def __init__(self, limits: Limits):
        self.dirs: list[Path] = []
        identity = host_identity()
        name = f"grader-{os.getpid()}-{next(_counter)}"
        for controller, settings in (("pids", {"pids.max": limits.processes}),
                                     ("memory", {"memory.limit_in_bytes": limits.memory_bytes,
                                                 "memory.memsw.limit_in_bytes": limits.memory_bytes})):
            path = CGROUP_ROOT / controller / name
            try:
                path.mkdir()
            except OSError:
                continue
            self.dirs.append(path)
            if identity is not None:  # the unprivileged process that joins must be able to write cgroup.procs
                try:
                    os.chown(path / "cgroup.procs", *identity)
                except OSError:
                    pass
            for key, value in settings.items():
                try:
                    (path / key).write_text(str(value))
                except OSError:
                    pass  # memsw is absent without swap accounting; the plain limit still applies

    def join_command(self) -> list[str]:
        """A shell prefix that moves itself into the cgroups and then execs the sandbox (no race)."""
        if not self.dirs:
            return []
        moves = " && ".join(f"echo $$ > {d / 'cgroup.procs'}" for d in self.dirs)
        return ["/bin/sh", "-c", moves + ' && exec "$@"', "sh"]

    def hit_memory_limit(self) -> bool:
        for d in self.dirs:
            failcnt = d / "memory.failcnt"
            if failcnt.exists() and failcnt.read_text().strip() not in ("", "0"):
                return True
        return False

    def remove(self) -> None:
        dirs, self.dirs = self.dirs, []  # once
        for d in dirs:
            for _ in range(50):  # the kernel frees the group once its last process is reaped
                try:
                    d.rmdir()
                    break
                except OSError:
                    time.sleep(0.02)


def _repository() -> Path | None:
    """The checkout the grader package was imported from (it holds solutions/ and maybe a demo course: never
    visible); None when the package is installed (``pip install .``): its folder is then the venv's site-packages,
    which holds every library the notebook imports, and the course's folders are hidden by name instead."""
    parent = fingerprint.PACKAGE.parent.resolve()
    installed = {Path(p).resolve() for p in (*site.getsitepackages(), site.getusersitepackages(),
                                             sysconfig.get_path("purelib"), sysconfig.get_path("platlib"))}
    return None if parent in installed else parent


REPOSITORY = _repository()


def default_hidden(extra: list[Path] = ()) -> list[Path]:  # type: ignore[assignment]
    """What a sandbox must not see: the given course folders, this repository, and people's home folders."""
    candidates = [*extra, *([REPOSITORY] if REPOSITORY else []), Path("/root"), Path("/home")]
    return sorted({p.resolve() for p in candidates if p.exists()}, key=lambda p: len(p.parts))


def gradebook_folder(db_url: str) -> Path | None:
    """The local folder a gradebook URL reaches: a SQLite file's folder, or a PostgreSQL server's Unix-socket folder
    (``postgresql://...?host=/path`` or ``postgresql://%2Fpath/...``); None for a server reached over the network
    (sandboxes have none)."""
    from urllib.parse import parse_qs, unquote, urlsplit

    url = str(db_url)
    if url.startswith("sqlite:///"):
        path = url.removeprefix("sqlite:///").split("?", 1)[0]
        return Path(path).resolve().parent if path and path != ":memory:" else None
    parts = urlsplit(url)
    hosts = parse_qs(parts.query).get("host", []) + [unquote(parts.netloc.rsplit("@", 1)[-1].split(":", 1)[0])]
    for host in hosts:
        if host.startswith("/"):
            return Path(host)
    return None


def course_hidden(root: Path | str | None, db_url: str) -> list[Path]:
    """What a sandbox grading a course must not see on top of ``default_hidden``: the course folder and the
    gradebook's folder."""
    hide = [Path(root).resolve()] if root else []
    folder = gradebook_folder(db_url)
    if folder is not None:
        hide.append(folder)
    return sorted(set(hide))


def default_exposed() -> list[Path]:
    """What it needs even inside a hidden folder, read-only: the venv and the Python install, by their real
    paths (a symlinked .venv included); the grader package is mounted apart (``TRUSTED_GRADER``)."""
    paths = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    return sorted(paths, key=lambda p: len(p.parts))


def _aliases() -> dict[str, str]:
    """Paths the grader uses that are symlinks to exposed folders (e.g. a symlinked .venv): where to bind what."""
    aliases = {}
    for path in (Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).parent):
        absolute = Path(os.path.abspath(path))
        if absolute != absolute.resolve():
            aliases[str(absolute)] = str(absolute.resolve())
    return aliases


def trusted_package() -> Path:
    """The grader package this process imported (its real folder): the one the sandbox must run."""
    return fingerprint.PACKAGE


# The only host folders a sandbox sees, read-only (plus ``default_exposed()``): the system, not people's files.
# An allowlist: a checkout elsewhere on the machine, a home folder, another course: none of them exist inside.
SYSTEM = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")


def _system_mounts() -> list[str]:
    args: list[str] = []
    for name in SYSTEM:
        path = Path(name)
        if path.is_symlink():  # merged /usr (Debian 12): /bin -> usr/bin
            args += ["--symlink", os.readlink(path), name]
        elif path.is_dir():
            args += ["--ro-bind", name, name]
    return args


def command(argv: list[str], scratch: Path | None, hide: list[Path], expose: list[Path], env: dict[str, str],
            tmp_bytes: int | None = None, seccomp_fd: int | None = None, as_pid_1: bool = False) -> list[str]:
    """The bwrap command line for ``argv``: system folders and ``expose`` read-only, the grader package at
    ``TRUSTED_GRADER``, ``scratch`` bound writable (or none), /tmp private (sized), /dev/shm small, the root
    and /dev read-only; ``hide`` is emptied even inside what is exposed. With ``as_pid_1`` the program is
    the sandbox's init: no bubblewrap process stays inside holding the descriptors it was started with."""
    args = ["bwrap", *_system_mounts(), "--dev", "/dev", "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm",
            "--remount-ro", "/dev", "--proc", "/proc"]
    args += (["--size", str(tmp_bytes)] if tmp_bytes else []) + ["--tmpfs", "/tmp"]  # first: binds may lie inside
    expose = sorted({*expose, *default_exposed()}, key=lambda p: len(Path(p).parts))
    for path in expose:
        args += ["--ro-bind", str(path), str(path)]
    for alias, real in _aliases().items():
        if not any(Path(alias).is_relative_to(e) for e in expose):
            args += ["--ro-bind", real, alias]
    args += ["--ro-bind", str(trusted_package()), TRUSTED_GRADER + "/grader"]
    for path in hide:  # after the binds: a hidden folder inside an exposed one is emptied
        if any(path.is_relative_to(e) for e in expose):
            args += ["--tmpfs", str(path)]
    if scratch is not None:
        args += ["--bind", str(scratch), str(scratch)]
    args += ["--remount-ro", "/",
             "--chdir", str(scratch or "/tmp"),
             "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
             "--uid", str(NOBODY), "--gid", str(NOBODY), "--clearenv"]
    if as_pid_1:
        args += ["--as-pid-1"]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    for key, value in env.items():
        args += ["--setenv", key, value]
    return args + ["--", *argv]


def run_sandboxed(argv: list[str], *, scratch: Path, hide: list[Path] = (),  # type: ignore[assignment]
                  expose: list[Path] = (), env: dict[str, str] | None = None,  # type: ignore[assignment]
                  limits: Limits = Limits()) -> Outcome:
    """Run ``argv`` in a sandbox; always returns, within about ``limits.wall_seconds``."""
    from grader.isolation import syscalls

    scratch.mkdir(parents=True, exist_ok=True)
    os.chmod(scratch, 0o777)  # writable by the sandbox's unprivileged user
    blocked = _unreadable_by(scratch, host_identity())
    if blocked:
        raise SetupError(f"the sandbox user cannot reach its scratch folder {scratch} ({blocked} is private): "
                         "put it under a folder others may search, such as /tmp")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(scratch), "LANG": "C.UTF-8", **(env or {})}
    cgroups = _Cgroups(limits)

    def apply_rlimits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    started = time.monotonic()
    policy = syscalls.descriptor()
    try:
        process = subprocess.Popen(
            cgroups.join_command() + command(argv, scratch, list(hide), list(expose), env, seccomp_fd=policy, as_pid_1=True),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, pass_fds=(policy,),
            preexec_fn=apply_rlimits, start_new_session=True, **_popen_identity(),  # type: ignore[arg-type]
        )
    finally:
        os.close(policy)
    chunks: list[bytes] = []
    flooded = threading.Event()

    def read_capped() -> None:
        total = 0
        assert process.stdout is not None
        while True:
            chunk = process.stdout.read1(65536) if hasattr(process.stdout, "read1") else process.stdout.read(65536)
            if not chunk:
                return
            if total < limits.output_bytes:
                chunks.append(chunk[: limits.output_bytes - total])
            total += len(chunk)
            if total > limits.output_bytes:
                flooded.set()
                _kill(process)
                return

    reader = threading.Thread(target=read_capped, daemon=True)
    reader.start()
    stopped = ""
    try:
        process.wait(timeout=limits.wall_seconds)
    except subprocess.TimeoutExpired:
        stopped = "timeout"
    finally:
        _kill(process)
        process.wait()
        reader.join(timeout=5)
    if flooded.is_set():
        stopped = "output"
    elif not stopped and (cgroups.hit_memory_limit() and process.returncode not in (0, None)):
        stopped = "memory"
    cgroups.remove()
    output = b"".join(chunks).decode("utf-8", errors="replace")
    return Outcome(process.returncode, output, time.monotonic() - started, stopped, limits)


def _kill(process: subprocess.Popen) -> None:
    """SIGKILL the sandbox's whole session; its pid namespace takes every descendant with it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


FONT_LISTS = mounts.FONT_LISTS  # matplotlib's font lists, built here once (grader/boundary/mounts.py)


def prepare_font_lists() -> None:
    """Build matplotlib's font list into ``FONT_LISTS`` unless it is there (one ``stat`` then). Nothing is said
    when it cannot be (matplotlib missing, a read-only venv): workers then build their own, as before."""
    if any(FONT_LISTS.glob("fontlist-*.json")):
        return
    import tempfile

    try:
        FONT_LISTS.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=FONT_LISTS) as home:  # on the same file system: moved atomically
            subprocess.run([sys.executable, "-I", "-c", "import matplotlib.font_manager"], check=True, timeout=300,
                           capture_output=True, env={"HOME": home, "MPLCONFIGDIR": home, "PATH": "/usr/bin:/bin"})
            for built in Path(home).glob("fontlist-*.json"):
                built.chmod(0o644)
                os.replace(built, FONT_LISTS / built.name)
    except (OSError, subprocess.SubprocessError):
        pass


def setup_host() -> int:
    """``python -m grader.isolation.sandbox setup`` (``make install``): as root, create the unprivileged user student code
    runs as, and let it search (not list) the folders on the way to the Python install and the venv; build the
    workers' font list (``prepare_font_lists``)."""
    prepare_font_lists()
    if os.geteuid() != 0:
        return 0  # the sandbox runs as this (unprivileged) user: nothing to set up
    try:
        pwd.getpwnam(SANDBOX_USER)
    except KeyError:
        done = subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                               "--shell", "/usr/sbin/nologin", SANDBOX_USER], capture_output=True, text=True)
        if done.returncode != 0:
            print(f"warning: could not create the user {SANDBOX_USER} ({done.stderr.strip()}); "
                  f"student code will run as nobody")
        else:
            print(f"==> created the unprivileged user {SANDBOX_USER}: student code runs as it, never as root")
    identity = host_identity()
    for path in [*default_exposed(), trusted_package()]:
        for _ in range(len(path.parts)):
            blocked = _unreadable_by(path, identity)
            if not blocked:
                break
            if Path(blocked) == path or not shutil.which("setfacl"):
                print(f"warning: the sandbox user cannot read {blocked} (needed: {path}); grading will refuse to "
                      f"start. Make it readable by others, or install Python and the course outside it.")
                return 0  # the install goes on; grading says the same thing when it is asked to start
            subprocess.run(["setfacl", "-m", f"u:{SANDBOX_USER}:x", blocked], check=False)
            print(f"==> {SANDBOX_USER} may now pass through {blocked} (search only, no listing) to reach {path}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["setup"]:
        sys.exit(setup_host())
    sys.exit("usage: python -m grader.isolation.sandbox setup")
