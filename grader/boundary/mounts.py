"""Paths both sides name: what the host prepares for the sandbox, where the sandbox finds it (read-only inside)."""
from __future__ import annotations

import sys
from pathlib import Path

# matplotlib's list of the fonts it finds (its font cache), built once per venv on the host, as a worker would find
# them (an empty home: only the system's fonts and matplotlib's own), and copied into each worker's private cache
# before its warm-up imports pyplot: building it took every worker 0.2 s of its start. Read-only inside.
FONT_LISTS = Path(sys.prefix) / "share" / "autograd-course" / "matplotlib"
