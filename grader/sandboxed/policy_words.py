"""What a refusal of the course's policy says: in the notebook's language, and with what to write instead.

Why here and not at each ``raise``: the policy's refusals are built in about sixty places (compile time, run time,
RestrictedPython's own), almost all in one shape, "<the construct as written> is not available in graded code
(<why>)". ``worded`` turns that shape into the notebook's language (``grader.spec.messages.current()``: the plan's
language in the sandbox, the notebook's in the student's kernel) and adds one sentence saying what to write
instead, chosen by what was refused (``INSTEAD``, in order, first match). The sentences live in
``grader.spec.messages`` with every other sentence a student reads, and are translated with them.
"""

from __future__ import annotations

import re

FRAME = re.compile(r"^(?P<what>.*?) is not available in graded code(?P<why>.*)$", re.S)

# what was refused (a pattern over the English refusal) -> the sentence saying what to write instead
INSTEAD: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(pattern), key) for pattern, key in (
    (r"calling a graph node|register_hook inside", ""),  # these say it themselves
    (r"\b(?:import|the module|from) (?:os|subprocess|shutil|pathlib|socket|ctypes|gc|inspect|importlib|pickle|io|"
     r"builtins|resource|signal|threading|multiprocessing|sys)\b|sys\.\w+ is not", "policy_instead_module"),
    (r'"\.__class__"|"__class__"', "policy_instead_class"),
    (r'"\.__dict__"|"__dict__"', "policy_instead_dict"),
    (r"\b(?:eval|exec|compile)\(\)", "policy_instead_eval"),
    (r"\bopen\(\)|\bfromfile\b|\bloadtxt\b|\bsavetxt\b|\bnumpy\.(?:load|save)\b|torch\.load|tofile", "policy_instead_files"),
    (r"\b(?:globals|locals)\(\)", "policy_instead_globals"),
    (r"get_ipython|magic|shell escape", "policy_instead_magic"),
    (r"torch\.(?:compile|jit|export)\b", "policy_instead_compile"),
    (r"torch\.(?:ops|library|_C)\b|numpy\.lib\b|as_strided", "policy_instead_ops"),
    (r"metaclass|type\(\) with three|three-argument", "policy_instead_class_statement"),
    (r"a subclass of (?:torch\.Tensor|numpy\.ndarray)", "policy_instead_subclass"),
    (r"an underscore attribute|underscore attributes are", "policy_instead_underscore"),
    (r'the name "_', "policy_instead_name"),
    (r"hook", "policy_instead_hook"),
))


# the common shapes of what was refused (the English words around the construct as written) -> their sentence, for
# languages other than English (in English the refusal is said as it was built)
CONSTRUCTS: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(pattern), key) for pattern, key in (
    (r"^import (?P<name>\S+): the module (?P<module>\S+)$", "policy_what_import"),
    (r"^from (?P<name>\S+) import \.\.\.: the module (?P<module>\S+)$", "policy_what_import"),
    (r"^the module (?P<module>\S+)$", "policy_what_module"),
    (r"^the %(?P<name>\S+) magic$", "policy_what_magic"),
    (r'^(?P<name>"\.\w+") \(an underscore attribute of (?P<kind>.+)\)$', "policy_what_underscore"),
    (r"^a subclass of (?P<name>\S+) \(return plain tensors and arrays\)$", "policy_what_subclass"),
))
MORE = re.compile(r" \(and (?P<count>\d+) more\)$")


def instead(message: str) -> str:
    """The sentence saying what to write instead of what ``message`` refuses, in the current language ('' if none)."""
    from grader.spec.messages import say

    for pattern, key in INSTEAD:
        if pattern.search(message):
            return say(key) if key else ""
    return ""


def localized(message: str) -> str:
    """A refusal in the current language, without the sentence saying what to write instead (a one-line notice)."""
    from grader.spec.messages import current, say

    if current() != "en":
        frame = FRAME.match(message)
        if frame:
            return say("policy_refused", what=_what(frame["what"]), why=_why(frame["why"]))
    return message


def worded(message: str) -> str:
    """A refusal as the student reads it: in the current language, with what to write instead."""
    more = instead(message)  # decided on the English refusal
    message = localized(message)
    if not more:
        return message
    return message + more if message.endswith("。") else f"{message} {more}"  # (no space after a full-width stop)


def _why(why: str) -> str:
    """The reason in parentheses after a refusal, in the current language when it is one of the common ones."""
    from grader.spec.messages import say

    more = MORE.search(why)
    if more:
        return _why(why[:more.start()]) + say("policy_and_more", count=more["count"])
    if why.startswith(": "):  # _refused_instead's own sentence of what to write (English: the construct's words)
        return say("policy_colon_instead", instead=why[2:])
    plain = why.strip()
    if plain.startswith("(%time"):  # the magics that work: said by the sentence of what to write instead
        return ""
    for english, key in (("(Python's internals)", "policy_why_internals"),
                         ("(frames and code objects)", "policy_why_frames")):
        if plain == english:
            return say(key)
    return why


def _what(what: str) -> str:
    """The refused construct in the current language, when it is said in one of the common shapes."""
    from grader.spec.messages import say

    for pattern, key in CONSTRUCTS:
        match = pattern.match(what)
        if match:
            return say(key, **match.groupdict())
    return what
