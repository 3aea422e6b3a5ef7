"""The IPython shell a notebook's cells run in inside the sandbox, and what they show: ``make_shell`` (made once by
the worker, before it forks a child per notebook) and ``Outputs``, which keeps each cell's streams, rich display data
and errors as nbformat outputs, capped, for the autograded notebook (``grader.judge.outputs`` reads them back).
"""

from __future__ import annotations

import io
import re
from typing import Any

CELL_OUTPUT_BYTES = 256_000  # what one cell's outputs may take (text and images); the rest is cut, with a note
NOTEBOOK_OUTPUT_BYTES = 2_000_000  # all cells of a notebook
KEPT_MIMETYPES = ("text/plain", "image/png", "image/jpeg", "image/svg+xml", "text/latex")  # never student HTML


class Outputs:
    """What the student's cells show, as nbformat outputs (stdout, stderr, rich display data, errors with
    their traceback), in order and capped, so that autograded notebooks carry them as stock nbgrader's do.
    Installed on the shell once: its streams, display publisher, display hook and traceback printer."""

    def __init__(self, shell: Any) -> None:
        self.cell: list[dict[str, Any]] = []
        self.size = 0
        self.total = 0
        self.cut = False
        shell.display_pub.publish = self._publish
        shell.displayhook.write_output_prompt = lambda: None
        shell.displayhook.write_format_data = self._result
        shell._showtraceback = self._error
        self.stdout, self.stderr = _Stream(self, "stdout"), _Stream(self, "stderr")

    def begin(self) -> None:
        self.cell, self.size, self.cut = [], 0, False

    def _room(self, size: int) -> bool:
        if self.size + size > CELL_OUTPUT_BYTES or self.total + size > NOTEBOOK_OUTPUT_BYTES:
            if not self.cut:
                self.cut = True
                self.cell.append({"output_type": "stream", "name": "stderr",
                                  "text": "[more output not kept: the grader keeps at most "
                                          f"{CELL_OUTPUT_BYTES // 1000} kB per cell and "
                                          f"{NOTEBOOK_OUTPUT_BYTES // 1000_000} MB per notebook]\n"})
            return False
        self.size += size
        self.total += size
        return True

    def stream(self, name: str, text: str) -> None:
        if not text or not self._room(len(text)):
            return
        last = self.cell[-1] if self.cell else None
        if last and last["output_type"] == "stream" and last["name"] == name:
            last["text"] += text
        else:
            self.cell.append({"output_type": "stream", "name": name, "text": text})

    def _data(self, data: dict[str, Any]) -> dict[str, str] | None:
        kept = {k: v for k, v in data.items() if k in KEPT_MIMETYPES and isinstance(v, str)}
        if not kept or not self._room(sum(len(v) for v in kept.values())):
            return None
        return kept

    def _publish(self, data: dict[str, Any], metadata: Any = None, *args: Any, **kwargs: Any) -> None:
        kept = self._data(dict(data or {}))
        if kept:
            self.cell.append({"output_type": "display_data", "data": kept, "metadata": {}})

    def _result(self, data: dict[str, Any], metadata: Any = None) -> None:
        kept = self._data(dict(data or {}))
        if kept:
            self.cell.append({"output_type": "execute_result", "data": kept, "metadata": {}, "execution_count": None})

    def _error(self, etype: Any, evalue: Any, stb: list[str]) -> None:
        lines = [str(line) for line in stb][-60:]  # the deepest frames
        if self._room(sum(len(line) for line in lines)):
            self.cell.append({"output_type": "error", "ename": getattr(etype, "__name__", str(etype)),
                              "evalue": str(evalue)[:2000], "traceback": lines})


class _Stream(io.TextIOBase):
    def __init__(self, sink: Outputs, name: str) -> None:
        self.sink, self.name = sink, name

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.sink.stream(self.name, str(text))
        return len(text)


TRACEBACK_MODE = "Plain"


def make_shell() -> Any:
    """The IPython shell cells run in (a worker makes it once, before forking); no history file.

    Errors in cells are shown as plain Python tracebacks (IPython's ``Plain`` mode: each frame's file, line and
    code line), not in the ``Context`` mode of a kernel: Context formats every frame's surrounding source with
    stack_data, which parses each file in the traceback (torch's gradcheck.py among them) and highlights it, about
    0.3 s per error in a freshly forked child, against 5-30 ms; and for a student, torch's internals printed
    with a dozen lines of context each bury their own line, which Plain shows first."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    if InteractiveShell.initialized():
        return InteractiveShell.instance()
    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.xmode = TRACEBACK_MODE
    shell = InteractiveShell.instance(config=config)
    _skip_ipython_work_plain_python_needs_not(shell)
    return shell


# What IPython's input transformations act on (tests/test_sandbox.py checks the shortcut against IPython on every
# cell of the course and the catalogue): magics and shell escapes (%, !, !!), help (?), autocall escapes (/ ; , at
# the start of a line), pasted prompts (>>>, ..., In [1]:), and a first line that is blank or indented.
NEEDS_IPYTHON_TRANSFORMS = re.compile(r"\?|!(?!=)|^[ \t]*[%/;,]|=[ \t]*%|>>>|\.\.\.|In \[|\A[ \t]*(?:\n|\Z)|\A[ \t]", re.M)


def _skip_ipython_work_plain_python_needs_not(shell: Any) -> None:
    """Two passes of IPython's over every cell that plain Python code needs not, skipped when they cannot change
    anything (a tenth of a notebook's time in the sandbox): the input transformations (tokenizing the cell) when it
    has none of the syntax they act on, and the check for top-level ``await`` (compiling the cell once more) when
    the cell has neither ``await`` nor ``async``. Otherwise IPython does both, as in a kernel."""
    manager = shell.input_transformer_manager
    transform, should_run_async = manager.transform_cell, shell.should_run_async

    def transform_cell(cell: str) -> str:
        if NEEDS_IPYTHON_TRANSFORMS.search(cell):
            return transform(cell)
        return cell if cell.endswith("\n") else cell + "\n"

    def maybe_async(raw_cell: str, *, transformed_cell: str | None = None, preprocessing_exc_tuple: Any = None) -> bool:
        text = transformed_cell if transformed_cell is not None else raw_cell
        if "await" not in text and "async" not in text:
            return False
        return should_run_async(raw_cell, transformed_cell=transformed_cell, preprocessing_exc_tuple=preprocessing_exc_tuple)

    manager.transform_cell = transform_cell
    shell.should_run_async = maybe_async
