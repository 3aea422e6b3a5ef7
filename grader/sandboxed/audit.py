"""The audit hook's judgement of an event in a notebook's process (``grader.sandboxed.child.run_cells`` installs
the hook): what it attempted, if no honest answer does it; else "".

Which events, and why: measured on the course's solutions, the catalogue and the alternatives (none raises them).
Code is the notebook's when it comes from neither the Python install, the venv, nor a frozen module
(``code_origin`` tells a library's own code from code that claims a library's file name).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

from grader.sandboxed.code_origin import origin_check

GRADER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # grader/, every layer
TRUSTED_CODE = tuple({os.path.abspath(p) + os.sep for p in (sys.prefix, sys.base_prefix, os.path.dirname(os.__file__))})

# Audit events no honest answer raises (measured on the course's solutions, the catalogue and alternatives).
ALWAYS_FLAGGED = {
    "gc.get_referrers": "gc.get_referrers (reaching the grader's objects)",
    "gc.get_referents": "gc.get_referents (reaching the grader's objects)",
    "gc.get_objects": "gc.get_objects (reaching the grader's objects)",
    "sys._current_frames": "sys._current_frames (reading the grader's frames)",
    "_thread.start_new_thread": "starting a thread",
    "sys.addaudithook": "adding an audit hook",
    "sys.settrace": "a trace hook (sys.settrace)",
    "sys.setprofile": "a profile hook (sys.setprofile)",
    "os.exec": "replacing the process (os.exec*)",
    "os.posix_spawn": "starting a program (os.posix_spawn)",
}
FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})
PROC_DESCRIPTORS = ("/proc/", "/dev/fd")
# The events whose verdict depends on their arguments (``_suspicion``), and those the hook reads itself: every other
# event is judged by its name alone, so one found harmless is not judged again (see ``run_cells``' audit hook).
JUDGED_BY_ARGUMENTS = frozenset({"sys._getframe", "object.__getattr__", "open", "object.__setattr__",
                                 "object.__delattr__", "compile", "code.__new__"})
QUIET_EVENTS_KEPT = 512  # harmless event names remembered at most (a notebook could raise any number of names)


def suspicion() -> Callable[[str, tuple[Any, ...]], str]:
    """The audit hook's judgement of an event: what it attempted, if no honest answer does it; else "".

    What it reads is taken into its closure when the child starts, before any notebook code: its own copies of the
    tables, C functions and methods, strings. A cell that replaces this module's functions, empties its tables or
    rebinds builtins (len, isinstance) or os.path changes nothing it decides; the closure itself is reachable only
    through gc walks and frames, which it flags."""
    always = dict(ALWAYS_FLAGGED)
    flagged_event, frame_attributes = always.get, frozenset(FRAME_ATTRIBUTES)
    proc_descriptors, grader_dir, trusted_code = tuple(PROC_DESCRIPTORS), str(GRADER_DIR), tuple(TRUSTED_CODE)
    get_frame, is_instance, length, text_type, bytes_type = sys._getframe, isinstance, len, str, bytes
    decode = bytes.decode

    def student_file(filename: Any) -> bool:
        """Code that is neither the Python install, the venv, nor a frozen module: a notebook cell or a file it wrote
        (a path that is not absolute, or has "." or ".." parts, counts as the notebook's: no os.path here)."""
        if not is_instance(filename, text_type):
            return True
        if filename.startswith(grader_dir):
            return True
        if filename.startswith("<frozen"):
            return False
        return not (filename.startswith(trusted_code) and "/../" not in filename and "/./" not in filename)

    forged = origin_check(student_file)  # a library's file name claimed by code that is not its source

    def suspicious(event: str, args: tuple[Any, ...]) -> str:
        what = flagged_event(event)
        if what:
            return what
        if event == "compile" or event == "code.__new__":
            return forged(event, args)
        if event.startswith("ctypes."):
            return f"ctypes ({event}): raw memory access"
        if event.startswith("socket.") and event != "socket.getaddrinfo":
            return f"a socket ({event})"
        if event == "sys._getframe":
            code = args[0].f_code
            caller = get_frame(2).f_code
            if student_file(code.co_filename) or (caller.co_name == "walk_stack"
                                                  and caller.co_filename.endswith("traceback.py")):
                return "frame access (sys._getframe) to student or grader frames"
            return ""
        if event == "object.__getattr__" and length(args) > 1 and args[1] in frame_attributes:
            caller = get_frame(2).f_code.co_filename
            return f"frame access ({args[1]})" if student_file(caller) and not caller.startswith(grader_dir) else ""
        if event == "open" and args:
            path = args[0]
            # (an open by descriptor number is not flagged: this process holds no descriptor of the grader's,
            # and the standard library opens its own pipes that way, e.g. subprocess)
            text = path if is_instance(path, text_type) else (
                decode(path, "utf-8", "surrogateescape") if is_instance(path, bytes_type) else "")
            if text.startswith(proc_descriptors) and ("/fd" in text or "/mem" in text or "/map_files" in text
                                                      or "/task/" in text):
                return f"opening {text[:60]}"
        return ""

    return suspicious
