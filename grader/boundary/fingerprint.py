"""Which grader code runs: the package's folder and a digest of every source file in it, subpackages included.

Both sides compute it: the sandbox must run exactly the code the trusted side imported (``grader.isolation.pool``
compares the worker's answer with this process's), and a Dask worker's package must be this one
(``grader.isolation.cluster``). Every ``.py`` file under the package counts, by its path relative to the package:
moving, adding or editing one changes the digest.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent  # grader/ (this file is grader/boundary/fingerprint.py)


def sources(folder: Path = PACKAGE) -> list[Path]:
    """The package's source files, in a fixed order (compiled files and caches left out)."""
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.relative_to(folder).parts)


def digest(folder: Path = PACKAGE) -> bytes:
    """The full SHA-256 of the package's sources: each file's path relative to ``folder`` and its bytes."""
    h = hashlib.sha256()
    for path in sources(folder):
        h.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.digest()
