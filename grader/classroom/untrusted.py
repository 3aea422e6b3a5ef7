"""What submissions control, made harmless where the instructor (or a student) reads it, and the gradebook's
password kept out of what anyone reads.

* ``clean_html`` / ``SanitizedMarkdown``: the HTML of a student's markdown cell goes through nh3 (the Rust
  ammonia sanitizer) before it reaches a page: no ``<script>``, no ``on*`` attribute, no ``javascript:`` URL,
  no style, no id and no class (but code highlighting's): headings, lists, tables, code, links and images
  (``data:image/...`` ones included) stay.
  ``nbgrader_config.py`` puts ``SanitizedMarkdown`` in place of nbconvert's ``markdown2html`` filter for every
  ``HTMLExporter``: ``nbgrader generate_feedback`` and formgrader's view of a submission (nbgrader's own
  templates call that filter, not nbconvert's ``clean_html``, so ``HTMLExporter.sanitize_html`` alone leaves
  markdown cells live).
* ``printable``: a name (student id, notebook, cell) or a line of nbgrader's output, with control characters
  and ANSI escapes shown as ``\\x1b``, ``\\n``..., before it reaches a terminal or a log.
* ``csv_cell``: a CSV cell that a spreadsheet would read as a formula (it starts with ``=``, ``+``, ``-``,
  ``@``, a tab or a carriage return) is prefixed with ``'``, as OWASP recommends.
* ``hide_password`` / ``redact``: a database URL as SQLAlchemy shows it with ``hide_password=True``; any
  text with those URLs' passwords replaced by ``***``.

Imports nothing slow at import time (nh3 and SQLAlchemy when first used).
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any, Iterable
from urllib.parse import quote, quote_plus

# --- HTML -----------------------------------------------------------------------------------------------------

# ammonia's default tags (nh3.ALLOWED_TAGS) and tfoot; nothing beyond nh3's default attributes but title and lang:
# no style, no on*, and no id or class of the submission's (a student's <div class="alert alert-success"> drew a
# "Score 6/6 (verified)" banner with the page's own CSS; an id can clobber the page's elements). One exception,
# the highlighting nbconvert gives a fenced code block: class="highlight" on its <div>, Pygments' token classes
# on its <span>s. A student who writes those colours text as code is colouring, nothing the page shows as its own.
_EXTRA_TAGS = {"tfoot"}
_GENERIC_ATTRIBUTES = {"title", "lang"}
_DATA_IMAGE = re.compile(r"^data:image/(png|jpe?g|gif|webp|svg\+xml);base64,[A-Za-z0-9+/=\s]*$", re.IGNORECASE)


def _highlight_classes() -> dict[str, frozenset[str]]:
    """element -> the class names nbconvert's code highlighting puts on it (Pygments' short token names)."""
    from pygments.token import STANDARD_TYPES

    return {"div": frozenset({"highlight"}), "span": frozenset(name for name in STANDARD_TYPES.values() if name)}


_HIGHLIGHT: list[dict[str, frozenset[str]]] = []


def _keep_attribute(element: str, attribute: str, value: str) -> str | None:
    """data: URLs only as an image's source, and only for images; every other URL goes by nh3's schemes; a class
    only when it is code highlighting's (``_highlight_classes``), whole."""
    if attribute == "class":
        if not _HIGHLIGHT:
            _HIGHLIGHT.append(_highlight_classes())
        names = value.split()
        allowed = _HIGHLIGHT[0].get(element, frozenset())
        return value if len(names) == 1 and names[0] in allowed else None
    if value.strip().lower().startswith("data:"):
        return value if element == "img" and attribute == "src" and _DATA_IMAGE.match(value.strip()) else None
    return value


def clean_html(fragment: str) -> str:
    """``fragment`` with only harmless markup left (nh3, ammonia's allow-list): scripts and styles removed with
    their content, event handlers and javascript:/vbscript:/data: URLs (but images') removed, and every id,
    style and class but code highlighting's: nothing of a submission's can dress itself in the page's CSS."""
    import nh3

    attributes = {tag: set(allowed) for tag, allowed in nh3.ALLOWED_ATTRIBUTES.items()}
    attributes["*"] = set(_GENERIC_ATTRIBUTES)
    for tag in ("div", "span"):  # (then filtered: only code highlighting's classes are kept)
        attributes.setdefault(tag, set()).add("class")
    return nh3.clean(fragment, tags=set(nh3.ALLOWED_TAGS) | _EXTRA_TAGS, attributes=attributes,
                     url_schemes=set(nh3.ALLOWED_URL_SCHEMES) | {"data"}, attribute_filter=_keep_attribute,
                     strip_comments=True)


def _sanitized_markdown_class() -> type:
    from jinja2.utils import _PassArg
    from traitlets.config import Configurable

    class SanitizedMarkdown(Configurable):
        """nbconvert's ``markdown2html`` filter of the exporter it belongs to (its settings: attachments, anchor
        links, embedded images), its HTML then cleaned by ``clean_html``. Configure it as
        ``c.HTMLExporter.filters = {"markdown2html": "grader.classroom.untrusted.SanitizedMarkdown"}``: nbconvert builds
        it with the exporter as its parent."""

        jinja_pass_arg = _PassArg.context  # (what jinja2's @pass_context sets: the template's context comes first)

        def __call__(self, context: Any, source: str) -> str:
            render = getattr(self.parent, "markdown2html", None)
            if render is not None:
                rendered = render(context, source)
            else:  # an exporter without its own (nbconvert's plain filter)
                from nbconvert.filters import markdown2html

                rendered = markdown2html(source)
            return clean_html(rendered)

    SanitizedMarkdown.__module__ = __name__
    SanitizedMarkdown.__qualname__ = "SanitizedMarkdown"
    return SanitizedMarkdown


def __getattr__(name: str) -> Any:  # SanitizedMarkdown, built when nbconvert asks for it (traitlets imported then)
    if name == "SanitizedMarkdown":
        cls = _sanitized_markdown_class()
        globals()[name] = cls
        return cls
    raise AttributeError(name)


# --- terminals, logs, CSV -------------------------------------------------------------------------------------


def _escape(char: str) -> str:
    return char.encode("unicode_escape").decode("ascii")


def printable(value: object) -> str:
    """``str(value)`` with every character a terminal would act on (control characters, ANSI escapes, newlines,
    bidirectional overrides, ...) written out as Python does in a repr: ``\\x1b``, ``\\n``, ``\\u202e``."""
    text = str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escape(c) for c in text)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> str:
    """A CSV cell a spreadsheet shows as text: ``'`` before a value it would read as a formula."""
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


# --- secrets --------------------------------------------------------------------------------------------------


def hide_password(db_url: str) -> str:
    """The URL to print: SQLAlchemy's rendering with the password as ``***`` (a string that is not a URL: any
    ``user:password@`` in it hidden all the same)."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(db_url).render_as_string(hide_password=True)
    except Exception:  # not a URL SQLAlchemy reads: hide what looks like a password in it
        return re.sub(r"(://[^:/@?]*:)[^@/?]*@", r"\1***@", db_url)


def password_of(db_url: str) -> str:
    try:
        from sqlalchemy.engine import make_url

        return make_url(db_url).password or ""
    except Exception:
        match = re.search(r"://[^:/@?]*:([^@/?]*)@", db_url)
        return match.group(1) if match else ""


def redact(text: str, *db_urls: str) -> str:
    """``text`` with each URL shown without its password, and the password itself (as written, or URL-encoded)
    replaced by ``***`` wherever else it appears (a driver's message, a configuration dump)."""
    for url in db_urls:
        if not url:
            continue
        secret = password_of(url)
        if not secret:
            continue
        text = text.replace(url, hide_password(url))
        for form in {secret, quote(secret, safe=""), quote_plus(secret)}:
            if len(form) >= 3:  # (shorter, every occurrence of those letters would go: no such password is safe)
                text = text.replace(form, "***")
    return text


def private_file(path: "os.PathLike[str] | str", mode: str = "w", encoding: str = "utf-8",
                 newline: str | None = None) -> Any:
    """``open(path, mode)`` of a file only its owner can read (0600, also when it existed before): logs that may
    hold what a gradebook's driver or a student's submission said."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if "a" in mode else os.O_TRUNC)
    descriptor = os.open(path, flags, 0o600)
    os.fchmod(descriptor, 0o600)
    return os.fdopen(descriptor, mode, encoding=encoding, newline=newline)


def private_folder(path: "os.PathLike[str] | str") -> None:
    """``path`` made if missing (with its parents) and readable by its owner only (0700, also when it existed
    before): a folder of the course that holds grades, diagnoses or names (reports/, grader_results/). On a shared
    server the course root is 711, so a student who knows a file's name could read it in a 755 folder."""
    os.makedirs(path, exist_ok=True)
    os.chmod(path, 0o700)


# --- log records ----------------------------------------------------------------------------------------------


def _printable_arg(value: Any) -> Any:
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, os.PathLike):
        return printable(os.fspath(value))
    return value


_INSTALLED: list[Any] = []


def escape_log_arguments(secrets: Iterable[str] = ()) -> None:
    """From now on in this process, the arguments of every log record (``log.info("Autograding %s", path)``:
    where nbgrader puts student ids, notebook and cell names) are escaped by ``printable``, and the messages
    have ``secrets`` (database URLs) redacted. The message's own text, written by the program, is kept as
    it is (multi-line messages and tracebacks stay readable)."""
    urls = [u for u in secrets if u]
    if _INSTALLED:
        _INSTALLED[1][:] = urls
        return
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if isinstance(record.args, dict):
            record.args = {k: _printable_arg(v) for k, v in record.args.items()}
        elif isinstance(record.args, tuple):
            record.args = tuple(_printable_arg(v) for v in record.args)
        if urls:
            if isinstance(record.msg, str):
                record.msg = redact(record.msg, *urls)
            if isinstance(record.args, tuple):
                record.args = tuple(redact(v, *urls) if isinstance(v, str) else v for v in record.args)
        return record

    logging.setLogRecordFactory(factory)
    _INSTALLED[:] = [factory, urls]
