"""The sandbox that runs students' code: it sees nothing private, reaches no network, and stops in time."""

from __future__ import annotations

import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from grader.isolation import sandbox

AVAILABLE, WHY = sandbox.available()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=f"sandbox unavailable: {WHY}")
PYTHON = str(Path(sys.executable))
VENV = Path(sys.prefix)


def run_python(code: str, tmp_path: Path, hide: list[Path] = (), **limits) -> sandbox.Outcome:
    # pytest's tmp_path is private to root; the sandbox runs as an unprivileged user, which must reach its scratch
    scratch = Path(tempfile.mkdtemp(prefix="sandbox-test-"))
    (scratch / "program.py").write_text(textwrap.dedent(code))
    return sandbox.run_sandboxed([PYTHON, str(scratch / "program.py")], scratch=scratch, hide=list(hide), expose=[VENV],
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


# --- the report channel (grader.boundary.channel), without a sandbox: what the worker reads from a notebook's process ----

def _inbox_with(sends, key: bytes | None = b"k" * 32, second_connection: bool = False, serve=None):
    """A child process that connects to a fresh Inbox and runs ``sends(sock, sign)``; returns the Inbox's lines.
    ``serve``: (order, checks) the Inbox hands out (``Inbox.serve``)."""
    import json as _json
    import os
    import socket

    from grader.boundary import channel

    inbox = channel.Inbox(key)
    if serve is not None:
        inbox.serve(*serve)
    pid = os.fork()
    if pid == 0:  # the "notebook's process"
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)  # as grader.sandboxed.child does
            sock.connect(inbox.address)
            if second_connection:
                time.sleep(0.3)  # the first is taken by then
                try:
                    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    other.connect(inbox.address)
                    other.sendall(channel.sign(key, b'{"event": "start", "index": 99}') if key else b"")
                except OSError:
                    pass
            sends(sock, lambda payload: channel.sign(key, payload) if key else payload + b"\n")
        finally:
            os._exit(0)
    deadline = time.monotonic() + 30  # (a loaded machine)
    while time.monotonic() < deadline:
        inbox.collect(pid)
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.01)
    inbox.collect(pid)
    inbox.close()
    return [_json.loads(line) for line in inbox.lines]


def _flags(lines):
    return [line["what"] for line in lines if line.get("event") == "flag"]


def test_channel_keeps_signed_lines_of_the_notebooks_process_only():
    """Signed lines are kept; a line the notebook's code writes without the grader's key is flagged, not kept; a
    second connection is refused by the kernel (the worker stopped listening) or flagged, never read."""
    def sends(sock, sign):
        sock.sendall(sign(b'{"event": "start", "index": 0}'))
        sock.sendall(b'{"event": "observed", "index": 0, "calls": []}\n')  # unsigned: the notebook's own code
        sock.sendall(sign(b'{"event": "done", "index": 0, "error": ""}'))

    lines = _inbox_with(sends, second_connection=True)
    assert [line.get("event") for line in lines] == ["start", "flag", "done"], lines
    assert "not signed" in lines[1]["what"]
    assert not [line for line in lines if line.get("index") == 99], lines


def test_a_check_is_handed_out_only_in_its_turn_and_only_once():
    """The worker holds the checks (grader.boundary.channel): a test item's calls go to the notebook's process when
    it starts that item after every item before it. A start out of the plan's order (an escaped notebook signing
    its own lines to fetch a later check early) is flagged and answered with nothing; a check is sent once."""
    import json as _json

    def sends(sock, sign):
        sock.settimeout(2)
        got = []

        def start(index):
            sock.sendall(sign(b'{"event": "start", "index": %d}' % index))
            try:
                got.append(sock.recv(65536).decode())
            except OSError:  # (a timeout: nothing was sent back)
                got.append("")

        start(2)  # before its turn: nothing
        sock.sendall(sign(b'{"event": "start", "index": 0}'))
        sock.sendall(sign(b'{"event": "done", "index": 0, "error": ""}'))
        start(1)  # its turn: its calls
        start(1)  # again: out of order now, nothing
        sock.sendall(sign(_json.dumps({"event": "done", "index": 9, "error": _json.dumps(got)}).encode()))

    checks = {1: [{"entry": "check_one"}], 2: [{"entry": "check_two"}]}
    lines = _inbox_with(sends, serve=([0, 1, 2], checks))
    (received,) = [_json.loads(line["error"]) for line in lines if line.get("index") == 9]
    assert received[0] == "" and received[2] == "", f"a check was handed out of its turn: {received}"
    assert _json.loads(received[1]) == {"calls": [{"entry": "check_one"}]}, received
    assert len([f for f in _flags(lines) if "out of the plan's order" in f]) == 2, lines


def test_channel_drops_what_a_forked_process_writes_on_the_inherited_connection():
    """The kernel names the writer of every piece (SO_PASSCRED): a forked process's line, even signed, is dropped
    and flagged; the notebook's own lines around it are kept whole."""
    import os

    def sends(sock, sign):
        sock.sendall(sign(b'{"event": "start", "index": 0}'))
        pid = os.fork()
        if pid == 0:
            sock.sendall(sign(b'{"event": "observed", "index": 0, "calls": ["forged"]}'))
            os._exit(0)
        os.waitpid(pid, 0)
        sock.sendall(sign(b'{"event": "done", "index": 0, "error": ""}'))

    lines = _inbox_with(sends)
    assert "forged" not in str(lines) and [line.get("event") for line in lines] == ["start", "flag", "done"], lines
    assert "other than the notebook's own" in lines[1]["what"]


@pytest.mark.parametrize("payload", [
    b"[" * 200_000 + b"]" * 200_000,  # RecursionError in json.loads: it killed the worker
    b'{"event": "start", "index": "\xff\xfe"}',  # not UTF-8
    b"x" * 5_000_000,  # longer than a message may be
    b'["a list, not an object"]',
], ids=["deep", "bad-utf8", "huge", "not-an-object"])
def test_channel_contains_any_unreadable_report_and_flags_it(payload):
    """Whatever a (signed) line holds, reading it never raises: it is dropped and flagged, and the lines after it are
    still read."""
    def sends(sock, sign):
        sock.sendall(sign(b'{"event": "start", "index": 0}'))
        sock.sendall(sign(payload))
        sock.sendall(sign(b'{"event": "done", "index": 0, "error": ""}'))

    lines = _inbox_with(sends)
    assert [line.get("event") for line in lines] == ["start", "flag", "done"], [str(line)[:200] for line in lines]


def test_channel_unsigned_mode_reads_plain_lines():
    """Unsandboxed grading of trusted code (``python -m grader.sandboxed.child PLAN ADDRESS``) signs nothing."""
    def sends(sock, sign):
        sock.sendall(sign(b'{"event": "start", "index": 0}') + sign(b'{"event": "done", "index": 0, "error": ""}'))

    assert [line.get("event") for line in _inbox_with(sends, key=None)] == ["start", "done"]


_DYING_WORKER = r"""
import json, sys
for line in sys.stdin:
    task = json.loads(line)
    flag = json.dumps({"event": "flag", "index": 0, "what": "gc.get_objects (reaching the grader's objects)"})
    print(json.dumps({"id": task["id"], "flags": [flag]}), flush=True)
    sys.exit(9)  # then dies, as a worker the notebook took down would
"""


def test_flags_a_worker_handed_on_survive_its_death():
    """A worker hands each flag on to the pool as it arrives ({"id", "flags"}), then dies before answering, on both
    tries of the notebook: the notebook ends as "the grading worker died" and stays flagged (on the old code its
    flags died with the worker)."""
    import queue
    import subprocess
    import threading

    from grader.isolation import pool as pool_module

    def dying_worker(pool):
        worker = object.__new__(pool_module._Worker)
        worker.pool, worker.ready, worker.problem = pool, True, ""
        worker.cgroups = sandbox._Cgroups.__new__(sandbox._Cgroups)
        worker.cgroups.dirs = []
        worker.process = subprocess.Popen([sys.executable, "-c", _DYING_WORKER], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, text=True, bufsize=1, start_new_session=True)
        return worker

    pool = object.__new__(pool_module.Pool)
    pool.limits, pool._expected, pool._seconds, pool._waiting, pool._running = sandbox.Limits(), 0, [], 0, []
    pool._demand, pool.idle = threading.Condition(), queue.Queue()
    pool._fresh = lambda: dying_worker(pool)  # type: ignore[method-assign]
    pool.idle.put(dying_worker(pool))
    try:
        data, outcome = pool.run_plan([{"kind": "code", "index": 0, "source": "pass"}], 5)
    finally:
        while not pool.idle.empty():
            pool.idle.get().close()
    assert outcome.stopped == "worker", outcome
    assert b"gc.get_objects" in data, data


def test_a_worker_that_cannot_remove_system_v_objects_retires(monkeypatch):
    """What the worker could not remove (here: a shared memory segment that stays listed) makes it unfit: the pool
    then grades the next notebook on a fresh worker (the retirement of a worker whose scratch could not be emptied)."""
    from grader.sandboxed import worker

    monkeypatch.setattr(worker, "_others", lambda: [])
    monkeypatch.setattr(worker, "_leftovers", lambda folder: [])
    monkeypatch.setattr(worker, "_sysv_objects", lambda kind: [32769] if kind == "shm" else [])
    assert "System V IPC objects" in worker.unfit()
    monkeypatch.setattr(worker, "_sysv_objects", lambda kind: [])
    assert worker.unfit() == ""
