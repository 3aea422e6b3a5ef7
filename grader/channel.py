"""How a notebook's process reports to whoever runs it: one connection per message to a listening socket.

The notebook's process (``grader.child``) holds no descriptor of this channel while student code runs: it
connects, sends one JSON line and closes, each time. The receiving side (the sandboxed worker, or the
grader itself when it runs a notebook unsandboxed) keeps a message only when the kernel names its sender
(SO_PEERCRED) as that process; any other sender is recorded as a flag, never as an observation. Sizes are
capped: one message, and all of a notebook's.
"""

from __future__ import annotations

import json
import secrets
import socket
import struct
import time
from typing import Any

RESULTS_LIMIT = 4_000_000  # bytes of results kept per notebook (a whole course notebook sends ~150 kB)
MESSAGE_LIMIT = 4_000_000  # bytes of one message
PEERCRED = struct.Struct("3i")  # pid, uid, gid


class Inbox:
    """The messages of one notebook's child, from the worker's listening socket; other senders are flagged."""

    def __init__(self) -> None:
        self.address = "\0grader-" + secrets.token_hex(12)  # abstract: no file, gone with the socket
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.address)
        self.listener.listen(128)
        self.listener.setblocking(False)
        self.lines: list[str] = []
        self.size = 0
        self.full = False
        self.last_index: Any = None

    def collect(self, child_pid: int, deadline: float) -> None:
        """Read every connection waiting now (each is one message)."""
        while True:
            try:
                connection, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            with connection:
                pid = PEERCRED.unpack(connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, PEERCRED.size))[0]
                if pid != child_pid:  # a process the notebook forked, or anything else: never an observation
                    self._add({"event": "flag", "index": self.last_index,
                               "what": f"a process other than the notebook's own (pid {pid}) tried to send results"})
                    continue
                message = self._read(connection, deadline)
            line = message.split(b"\n", 1)[0].decode("utf-8", errors="replace")
            if line:
                try:
                    entry = json.loads(line)
                    if isinstance(entry, dict) and entry.get("event") == "start":
                        self.last_index = entry.get("index")
                except ValueError:
                    pass
                self._add_line(line)

    @staticmethod
    def _read(connection: socket.socket, deadline: float) -> bytes:
        connection.settimeout(max(0.1, min(5.0, deadline - time.monotonic())))
        chunks, size = [], 0
        try:
            while size <= MESSAGE_LIMIT:
                chunk = connection.recv(1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        except OSError:
            return b""  # a sender that stalls or breaks off sends nothing
        return b"".join(chunks) if size <= MESSAGE_LIMIT else b""

    def _add(self, entry: dict[str, Any]) -> None:
        self._add_line(json.dumps(entry))

    def _add_line(self, line: str) -> None:
        if self.size + len(line) + 1 > RESULTS_LIMIT:
            self.full = True
            return
        self.lines.append(line)
        self.size += len(line) + 1

    def close(self) -> None:
        self.listener.close()
