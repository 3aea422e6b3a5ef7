"""Where a code object came from, for the sandboxed child's audit hook: a library's file, or the notebook.

The audit hook (``grader.sandboxed.audit.suspicion``) judges some events by whose code raised them: reading a
frame's ``f_back`` or a traceback's ``tb_frame`` is what the standard library's ``traceback`` module does, and a
notebook's own code doing it is walking to the grader's frames. It tells them apart by the file a code object names
(``co_filename``). A name is only a claim: code an escaped cell compiles under ``/usr/lib/python3.11/os.py`` would
pass for the standard library's (issue 29, the escape of 27 Nov). So the claim is checked where it is made. Code
gets a file name from ``compile`` (the import system compiling a module's source), or from the code object's
constructor (``CodeType(...)``, ``code.replace(co_filename=...)``): ``forged`` says when either names a library's
file for anything but that file's own source, and the hook flags it before the code can run.
"""

from __future__ import annotations

import io
from typing import Any, Callable


def origin_check(student_file: Callable[[Any], bool]) -> Callable[[str, tuple[Any, ...]], str]:
    """``forged(event, args)`` for the audit hook: what was attempted ("" when nothing), for the events
    ``compile`` and ``code.__new__``. What it calls is taken into its closure now, before any notebook code."""
    open_code, text_type, bytes_type, is_instance = io.open_code, str, bytes, isinstance
    encode, decode, os_error = str.encode, bytes.decode, OSError

    def named(filename: Any) -> str:
        if is_instance(filename, bytes_type):
            return decode(filename, "utf-8", "surrogateescape")
        return filename if is_instance(filename, text_type) else ""

    def forged(event: str, args: tuple[Any, ...]) -> str:
        if event == "code.__new__":  # (code, filename, name, argcount, ...): a code object made by hand
            filename = named(args[1]) if len(args) > 1 else ""
            if filename and not student_file(filename):
                return f"a code object made under a library's file name ({filename[-80:]})"
            return ""
        if event != "compile" or len(args) < 2:
            return ""
        filename = named(args[1])
        if not filename or student_file(filename):
            return ""  # a cell, a string, a file the notebook wrote: the notebook's code, and judged as such
        source = args[0]
        if is_instance(source, text_type):
            source = encode(source, "utf-8", "surrogateescape")
        if is_instance(source, bytes_type):
            try:
                with open_code(filename) as file:
                    if file.read() == source:
                        return ""  # the import system compiling a module's own source
            except os_error:
                pass
        return f"code compiled under a library's file name ({filename[-80:]})"

    return forged
