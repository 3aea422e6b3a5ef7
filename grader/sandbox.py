"""Run untrusted code under bubblewrap, with limits, and leave nothing behind.

What a sandboxed program gets:
- the whole filesystem read-only, minus the hidden folders (the course root: solutions, gradebook, other
  students), each replaced by an empty tmpfs, plus the paths explicitly re-exposed read-only (e.g. the venv);
- one private writable scratch folder (its working directory) and a private /tmp;
- no network (a new, empty network namespace), its own pid namespace (everything it starts dies with it);
- limits: wall time, address space (RLIMIT_AS), file size, and where cgroup v1 is writable, a pids.max and a
  memory limit for the whole tree; its stdout/stderr are read through a capped pipe.

Where bwrap cannot start, ``available()`` says why, and callers refuse untrusted code unless told otherwise.
"""

from __future__ import annotations

import itertools
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
NOBODY = 65534
_counter = itertools.count()


@dataclass(frozen=True)
class Limits:
    wall_seconds: float = 120.0
    memory_bytes: int = 4 * 2**30  # torch's import alone maps ~2 GB of address space
    processes: int = 64
    output_bytes: int = 1_000_000
    file_bytes: int = 64 * 2**20


@dataclass
class Outcome:
    returncode: int | None
    output: str
    seconds: float
    stopped: str = ""  # "", "timeout", "output", "memory": why the sandbox stopped the program
    limits: Limits = field(default_factory=Limits)

    @property
    def reason(self) -> str:
        from .messages import say

        if self.stopped == "timeout":
            return say("reason_timeout", seconds=self.limits.wall_seconds)
        if self.stopped == "output":
            return say("reason_output", limit=self.limits.output_bytes)
        if self.stopped == "memory":
            return say("reason_memory", gib=self.limits.memory_bytes / 2**30)
        if self.stopped == "worker":
            return say("reason_worker")
        return say("reason_exit", code=self.returncode) if self.returncode else ""


class SandboxUnavailable(RuntimeError):
    pass


class SetupError(RuntimeError):
    """The grading environment itself is broken (not the student's fault): stop, say why, record nothing."""


def available() -> tuple[bool, str]:
    """(True, "") when bubblewrap can start a sandbox here; else (False, why)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False, "bubblewrap (bwrap) is not installed: run `make install` (Debian package bubblewrap)"
    try:
        done = subprocess.run([bwrap, *_system_mounts(), "--unshare-all", "--die-with-parent", "--", "true"],
                              capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bwrap could not start: {exc}"
    if done.returncode != 0:
        return False, f"bwrap could not create namespaces here: {done.stderr.strip() or done.returncode}"
    return True, ""


class _Cgroups:
    """A pids and a memory cgroup (v1) for one sandboxed tree, when the controllers are writable."""

    def __init__(self, limits: Limits):
        self.dirs: list[Path] = []
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
        for d in self.dirs:
            for _ in range(50):  # the kernel frees the group once its last process is reaped
                try:
                    d.rmdir()
                    break
                except OSError:
                    time.sleep(0.02)


REPOSITORY = Path(__file__).resolve().parent.parent  # holds solutions/ and maybe a demo course: never visible


def default_hidden(extra: list[Path] = ()) -> list[Path]:  # type: ignore[assignment]
    """What a sandbox must not see: the given course folders, this repository, and people's home folders."""
    candidates = [*extra, REPOSITORY, Path("/root"), Path("/home")]
    return sorted({p.resolve() for p in candidates if p.exists()}, key=lambda p: len(p.parts))


def default_exposed() -> list[Path]:
    """What it needs even inside a hidden folder, read-only: the venv, the Python install, the grader package."""
    paths = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path(__file__).resolve().parent}
    return sorted(paths, key=lambda p: len(p.parts))


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
            tmp_bytes: int | None = None) -> list[str]:
    """The bwrap command line for ``argv``: system folders and ``expose`` read-only, ``scratch`` bound
    writable (or none), /tmp private (sized); ``hide`` is emptied even inside what is exposed."""
    args = ["bwrap", *_system_mounts(), "--dev", "/dev", "--proc", "/proc"]
    expose = sorted({*expose, *default_exposed()}, key=lambda p: len(Path(p).parts))
    args += (["--size", str(tmp_bytes)] if tmp_bytes else []) + ["--tmpfs", "/tmp"]
    for path in expose:
        args += ["--ro-bind", str(path), str(path)]
    for path in hide:  # after the binds: a hidden folder inside an exposed one is emptied
        if any(path.is_relative_to(e) for e in expose):
            args += ["--tmpfs", str(path)]
    if scratch is not None:
        args += ["--bind", str(scratch), str(scratch)]
    args += ["--chdir", str(scratch or "/tmp"),
             "--unshare-all", "--die-with-parent", "--new-session", "--uid", str(NOBODY), "--gid", str(NOBODY),
             "--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    return args + ["--", *argv]


def run(argv: list[str], *, scratch: Path, hide: list[Path] = (), expose: list[Path] = (),  # type: ignore[assignment]
        env: dict[str, str] | None = None, limits: Limits = Limits()) -> Outcome:
    """Run ``argv`` in a sandbox; always returns, within about ``limits.wall_seconds``."""
    scratch.mkdir(parents=True, exist_ok=True)
    os.chmod(scratch, 0o777)  # writable by the sandbox's unprivileged user
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(scratch), "LANG": "C.UTF-8", **(env or {})}
    cgroups = _Cgroups(limits)

    def apply_rlimits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    started = time.monotonic()
    process = subprocess.Popen(
        cgroups.join_command() + command(argv, scratch, list(hide), list(expose), env),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        preexec_fn=apply_rlimits, start_new_session=True,
    )
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
