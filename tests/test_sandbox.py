"""The sandbox that runs students' code: it sees nothing private, reaches no network, and stops in time."""

from __future__ import annotations

import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from grader import sandbox

AVAILABLE, WHY = sandbox.available()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=f"sandbox unavailable: {WHY}")
PYTHON = str(Path(sys.executable))
VENV = Path(sys.prefix)


def run_python(code: str, tmp_path: Path, hide: list[Path] = (), **limits) -> sandbox.Outcome:
    # pytest's tmp_path is private to root; the sandbox runs as an unprivileged user, which must reach its scratch
    scratch = Path(tempfile.mkdtemp(prefix="sandbox-test-"))
    (scratch / "program.py").write_text(textwrap.dedent(code))
    return sandbox.run([PYTHON, str(scratch / "program.py")], scratch=scratch, hide=list(hide), expose=[VENV],
                       limits=sandbox.Limits(**{"wall_seconds": 20.0, **limits}))


def test_hidden_folders_are_empty_and_only_scratch_is_writable(tmp_path):
    secret = tmp_path / "course"
    (secret / "solutions").mkdir(parents=True)
    (secret / "solutions" / "answer.ipynb").write_text("the solution")
    solutions = str(sandbox.REPOSITORY / "solutions")
    outcome = run_python(f"""
        import os
        print("hidden:", os.listdir({str(secret)!r}) if os.path.exists({str(secret)!r}) else "absent")
        print("solutions:", os.path.exists({solutions!r}), "home:", os.listdir("/root") if os.path.isdir("/root") else [])
        open("mine.txt", "w").write("ok"); print("scratch: ok")
        try:
            open("/usr/evil", "w")
        except OSError as e:
            print("outside:", type(e).__name__)
    """, tmp_path, hide=[secret])
    assert outcome.returncode == 0, outcome.output
    assert ("hidden: []" in outcome.output or "hidden: absent" in outcome.output) and "scratch: ok" in outcome.output
    assert "outside: " in outcome.output
    assert "solutions: False" in outcome.output, "the repository's solutions must not be visible"
    assert "home: []" in outcome.output or "home: ['.pyenv']" in outcome.output, outcome.output
    assert (secret / "solutions" / "answer.ipynb").read_text() == "the solution"


def test_no_network_not_even_loopback(tmp_path):
    outcome = run_python("""
        import socket
        try:
            socket.create_connection(("127.0.0.1", 80), timeout=2); print("connected")
        except OSError as e:
            print("blocked:", type(e).__name__)
    """, tmp_path)
    assert "blocked:" in outcome.output and "connected" not in outcome.output


def test_a_loop_that_ignores_sigint_is_stopped_at_the_time_limit(tmp_path):
    started = time.monotonic()
    outcome = run_python("""
        import signal
        signal.signal(signal.SIGINT, signal.SIG_IGN); signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            pass
    """, tmp_path, wall_seconds=2.0)
    assert outcome.stopped == "timeout" and "did not finish within 2 s" in outcome.reason
    assert time.monotonic() - started < 10


def test_a_forked_process_does_not_outlive_the_sandbox(tmp_path):
    outcome = run_python("""
        import os, time
        if os.fork() == 0:
            os.setsid()
            time.sleep(3)
            open("orphan-was-alive.txt", "w").write("still running")
            os._exit(0)
        print("parent exits")
    """, tmp_path)
    assert outcome.returncode == 0
    time.sleep(4)
    assert not (tmp_path / "scratch" / "orphan-was-alive.txt").exists()


def test_a_memory_bomb_is_bounded(tmp_path):
    outcome = run_python("""
        chunks = []
        try:
            while True:
                chunks.append(bytearray(256 * 2**20))
        except MemoryError:
            print("MemoryError after", len(chunks) * 256, "MiB")
    """, tmp_path, memory_bytes=2 * 2**30)
    assert "MemoryError" in outcome.output or outcome.stopped == "memory", outcome.output[-500:]


def test_an_output_flood_is_cut_at_the_limit_without_buffering_it_all(tmp_path):
    started = time.monotonic()
    outcome = run_python("""
        while True:
            print("x" * 1000)
    """, tmp_path, output_bytes=200_000)
    assert outcome.stopped == "output" and len(outcome.output) <= 200_000
    assert time.monotonic() - started < 10


def test_a_fork_bomb_is_bounded(tmp_path):
    outcome = run_python("""
        import os, time
        n = 0
        try:
            for _ in range(1000):
                if os.fork() == 0:
                    time.sleep(20); os._exit(0)
                n += 1
            print("forked", n)
        except OSError as e:
            print("stopped after", n)
    """, tmp_path, processes=32, wall_seconds=8.0)
    assert "stopped after" in outcome.output or outcome.stopped == "timeout", outcome.output[-300:]
