"""How a notebook's process reports to whoever runs it: one connection, opened before any student code runs.

The notebook's process (``grader.sandboxed.child``) connects to a listening socket once, first thing, and sends one
JSON line per report on that connection; the receiving side (the sandboxed worker, or the grader itself
when it runs a notebook unsandboxed) takes the first connection whose sender the kernel names as that
process (SO_PEERCRED) and then stops listening: any later connection is refused by the kernel, so nothing
can hold the receiver with connections that never send.

What holds, and against whom (the observer is the notebook's process while it runs the grader's code):
- **exec**: the connection is opened close-on-exec, so a program the notebook execs (which keeps its pid)
  starts without it, and cannot connect again;
- **fork**: a forked process inherits the connection, but every read here asks the kernel who wrote each
  piece (SO_PASSCRED: a stream never mixes two writers' bytes in one read), and keeps only the notebook's
  own process's bytes; another writer's, or bytes the kernel names no writer of, are dropped and flagged.
  (The kernel records the writer when either end has SO_PASSCRED when it writes: the child sets it on its
  end before connecting, as bytes can be sent before this side accepts and sets it on its own.) The child also closes its copy in processes
  forked through Python (``os.register_at_fork``);
- **the notebook's own code writing on the connection** (``os.write`` raises no audit event): each line
  carries an HMAC under a key the child holds only in its reporter's closure (reached only by frames, gc,
  ctypes or closures of the grader's: flagged, or refused by the compile-time policy); a line without a
  valid one is dropped and flagged, never parsed;
- **a reader that breaks**: lines are capped in size, and whatever a line holds (200,000 nested brackets,
  bad UTF-8, no end) is contained here and recorded as a flag; nothing raises out of ``collect``, and
  nothing in it waits: the caller's deadline holds.

Sizes are capped: one message, and all of a notebook's.

**The checks stay on this side until their turn.** The plan the child is forked with holds the notebook's cells
and, for each test cell, only its place (``split_plan``); a check's calls (entry points, shapes, seeds, the drawn
probe's seed) are sent back on the connection when the child reports the ``start`` of that test cell, and only
if every item before it was started in the plan's order (``Inbox.serve``). What an escape from the policy finds
in the child's memory is the cells before it and the check running now (whose inputs its code is handed anyway),
never a later check.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import socket
import struct
from typing import Any

RESULTS_LIMIT = 4_000_000  # bytes of results kept per notebook (a whole course notebook sends ~150 kB)
MESSAGE_LIMIT = 4_000_000  # bytes of one message
REFUSED_CONNECTIONS = 16  # connections from others recorded (flagged) before the listener is closed
FLAGS_LIMIT = 50  # flags this side adds per notebook
PEERCRED = struct.Struct("3i")  # pid, uid, gid
MAC_BYTES = 32  # hex characters of a line's HMAC-SHA256 kept (128 bits)


def split_plan(plan: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[Any, list[Any]]]:
    """(the plan the child may hold: each test item without its calls; {test item's index: its calls})."""
    held, checks = [], {}
    for item in plan:
        if item.get("kind") == "test":
            checks[item["index"]] = item.get("calls", [])
            item = {k: v for k, v in item.items() if k != "calls"}
        held.append(item)
    return held, checks


def plan_order(plan: list[dict[str, Any]]) -> list[Any]:
    """The indexes of the plan's items in the order the child starts them (the language item reports nothing)."""
    return [item["index"] for item in plan if item.get("kind") in ("code", "test")]


def sign(key: bytes, payload: bytes) -> bytes:
    """``payload`` (one JSON document, no newline) as the line the child sends: its HMAC, a space, itself."""
    return hmac.new(key, payload, hashlib.sha256).hexdigest()[:MAC_BYTES].encode() + b" " + payload + b"\n"


class Inbox:
    """The messages of one notebook's process, from its one connection; everything else is flagged."""

    def __init__(self, key: bytes | None = None) -> None:
        """``key``: the HMAC key the child signs its lines with (``new_key()``); None: lines are not signed
        (unsandboxed grading of trusted code, started as ``python -m grader.sandboxed.child PLAN ADDRESS``)."""
        self.key = key
        self.address = "\0grader-" + secrets.token_hex(12)  # abstract: no file, gone with the socket
        self.listening: socket.socket | None = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listening.bind(self.address)
        self.listening.listen(REFUSED_CONNECTIONS)
        self.listening.setblocking(False)
        self._quiet: tuple[socket.socket, socket.socket] | None = None  # never readable: see ``listener``
        self.connection: socket.socket | None = None
        self.ended = False  # the child closed its end (or it broke)
        self.refused = 0
        self.pending = b""  # the child's bytes after its last complete line
        self.skipping = False  # inside a line over MESSAGE_LIMIT: dropped up to its end
        self.lines: list[str] = []
        self.size = 0
        self.full = False
        self.last_index: Any = None
        self.flags = 0
        self.others: set[int] = set()
        self.new_flags: list[str] = []  # flag lines not yet taken by ``take_new_flags``
        self.order: list[Any] = []  # the plan's item indexes, in order (``serve``)
        self.checks: dict[Any, list[Any]] = {}  # a test item's calls, sent once when its turn comes
        self.started = 0  # items of ``order`` started so far

    def serve(self, order: list[Any], checks: dict[Any, list[Any]]) -> None:
        """Hand each test item's calls to the child when it starts that item in ``order`` (see the module's
        docstring): a start out of order is flagged and answered with nothing."""
        self.order, self.checks, self.started = list(order), dict(checks), 0

    @staticmethod
    def new_key() -> bytes:
        return secrets.token_bytes(32)

    def waitables(self) -> list[socket.socket]:
        """What to ``select`` on before the next ``collect``."""
        return [s for s in (self.listening, None if self.ended else self.connection) if s is not None]

    @property
    def listener(self) -> socket.socket:
        """One socket to ``select`` on before the next ``collect`` (callers that wait on one): the listening socket,
        then the connection, then (once it ended) one that is never readable."""
        if self.listening is not None:
            return self.listening
        if self.connection is not None and not self.ended:
            return self.connection
        if self._quiet is None:
            self._quiet = socket.socketpair()
        return self._quiet[0]

    def collect(self, child_pid: int, deadline: float | None = None) -> None:
        """Take what has arrived by now (never waits; ``deadline`` is kept for callers that passed one)."""
        try:
            self._accept(child_pid)
            self._receive(child_pid)
        except Exception as exc:  # noqa: BLE001  (nothing a notebook sends may stop its grading worker)
            self._flag(f"the grader could not read the notebook's reports ({type(exc).__name__}: {str(exc)[:100]})")
            self._end()

    def _accept(self, child_pid: int) -> None:
        while self.listening is not None:
            try:
                connection, _ = self.listening.accept()
            except (BlockingIOError, InterruptedError):
                return
            pid = PEERCRED.unpack(connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, PEERCRED.size))[0]
            if pid == child_pid and self.connection is None:
                connection.setblocking(False)
                connection.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
                self.connection = connection
                self._stop_listening()  # one connection per notebook: any other is refused by the kernel
                continue
            connection.close()
            self.refused += 1
            self._flag(f"a process other than the notebook's own (pid {pid}) tried to send results"
                       if pid != child_pid else "the notebook's process opened a second connection to the grader")
            if self.refused >= REFUSED_CONNECTIONS:
                self._stop_listening()

    def _stop_listening(self) -> None:
        if self.listening is not None:
            self.listening.close()
            self.listening = None

    def _receive(self, child_pid: int) -> None:
        if self.connection is None or self.ended:
            return
        room = socket.CMSG_SPACE(PEERCRED.size)
        while not self.ended:
            try:
                data, ancillary, _, _ = self.connection.recvmsg(1 << 20, room)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self._end()
                return
            if not data:
                self._end()
                return
            writer = next((PEERCRED.unpack(payload[:PEERCRED.size])[0] for level, kind, payload in ancillary
                           if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS), None)
            if writer != child_pid:  # a process forked with the connection: never an observation
                if writer not in self.others:
                    self.others.add(writer)  # type: ignore[arg-type]
                    self._flag(f"a process other than the notebook's own (pid {writer}) wrote on its channel")
                continue
            self._take(data)

    def _take(self, data: bytes) -> None:
        while data:
            end = data.find(b"\n")
            if self.skipping:
                if end < 0:
                    return
                self.skipping, data = False, data[end + 1:]
                continue
            if end < 0:
                self.pending += data
                if len(self.pending) > MESSAGE_LIMIT:
                    self._flag(f"a report longer than {MESSAGE_LIMIT:,} bytes (dropped)")
                    self.pending, self.skipping = b"", True
                return
            line, data = self.pending + data[:end], data[end + 1:]
            self.pending = b""
            if len(line) > MESSAGE_LIMIT:
                self._flag(f"a report longer than {MESSAGE_LIMIT:,} bytes (dropped)")
                continue
            self._line(line)

    def _line(self, line: bytes) -> None:
        if not line.strip():
            return
        payload = line
        if self.key is not None:
            mac, _, payload = line.partition(b" ")
            if not hmac.compare_digest(mac, sign(self.key, payload)[:MAC_BYTES]):
                self._flag("a report not signed by the grader's observer (written by the notebook's own code?)")
                return
        try:
            entry = json.loads(payload.decode("utf-8"))
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            self._flag(f"an unreadable report ({type(exc).__name__})")
            return
        if not isinstance(entry, dict):
            self._flag("an unreadable report (not a JSON object)")
            return
        if entry.get("event") == "start":
            self.last_index = entry.get("index")
        self._add_line(payload.decode("utf-8"), entry.get("event") == "flag")
        if entry.get("event") == "start" and self.order:
            self._next_item(entry.get("index"))

    def _next_item(self, index: Any) -> None:
        """The child started item ``index``: in the plan's order, a test item gets its calls now."""
        expected = self.order[self.started] if self.started < len(self.order) else None
        if index != expected or type(index) is not type(expected):
            self._flag(f"a report started plan item {str(index)[:20]} out of the plan's order (expected {expected})")
            return
        self.started += 1
        if index in self.checks and self.connection is not None:
            reply = json.dumps({"calls": self.checks.pop(index)}).encode("utf-8") + b"\n"
            try:
                self.connection.sendall(reply)  # small (a few kB): the socket's buffer takes it without waiting
            except OSError as exc:  # the child closed its end, or does not read: its checks go unobserved
                self._flag(f"the grader could not hand the notebook its next check ({type(exc).__name__})")

    def _end(self) -> None:
        self.ended = True
        if self.pending:
            self._flag("a report cut off before its end")
            self.pending = b""

    def _flag(self, what: str) -> None:
        if self.flags < FLAGS_LIMIT:
            self.flags += 1
            self._add_line(json.dumps({"event": "flag", "index": self.last_index, "what": what}), True)

    def _add_line(self, line: str, flag: bool = False) -> None:
        if self.size + len(line) + 1 > RESULTS_LIMIT:
            self.full = True
            return
        self.lines.append(line)
        self.size += len(line) + 1
        if flag:
            self.new_flags.append(line)

    def take_new_flags(self) -> list[str]:
        """The flag lines received since the last call: the worker hands them on at once, so that they outlive it."""
        taken, self.new_flags = self.new_flags, []
        return taken

    def close(self) -> None:
        self._stop_listening()
        if self.connection is not None:
            self.connection.close()
        for end in self._quiet or ():
            end.close()
