"""The course in another language, from one source: English ``solutions/`` plus gettext catalogues.

Every piece of prose a student reads in a notebook becomes one catalogue entry:

* a markdown cell is cut into blocks at blank lines (a fenced code block or a ``$$`` display stays whole); each
  block is one entry, so a translator works paragraph by paragraph and an edited paragraph costs one entry;
* in a code cell, a run of full-line comments at one indentation is one entry, a trailing comment is one, and a
  docstring is one. Code itself is never translated: the code of a translated notebook equals the English one's
  once comments and docstrings are stripped.

An entry's ``msgctxt`` is the cell id (nbformat 4.5) and what the text is (``md``, ``comment``, ``docstring``), its
``msgid`` the English text. When the English changes, GNU gettext's ``msgmerge --previous`` (the tool every gettext
project uses) keeps the old translation, marks it fuzzy and shows the old English beside the new: the entry is
not used until a translator has looked at it again.

Why polib and our own cutting rather than mdpo: mdpo re-renders markdown from its parse tree, and on this course it
re-wrapped every one of notebook 1's 36 markdown cells (measured): the English notebook rebuilt from its own
catalogue would not be the English notebook. Cutting at blank lines is exact (joining the blocks gives back the
cell, byte for byte) and keeps tables, lists and LaTeX in one piece for the translator.

    python -m grader.classroom.translation extract [--lang zh]   # templates + merge into i18n/<lang>/*.po
    python -m grader.classroom.translation stats [--lang zh]     # entries, words, translated / fuzzy / missing
    python -m grader.classroom.translation check [--lang zh]     # what a translation must keep (code, LaTeX, ...)
    python -m grader.classroom.translation build --out DIR [--fallback]   # the notebooks in that language
    python -m grader.classroom.translation compile [--lang zh]   # grader/spec/messages_<lang>.py from messages.po
"""

from __future__ import annotations

import argparse
import ast
import inspect
import io
import re
import shutil
import subprocess
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import nbformat
import polib

from grader.classroom.notebooks import canonical

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "solutions" / "autograd"
I18N = ROOT / "i18n"
TEMPLATES = I18N / "templates"

# Lines that are the course's machinery, not prose: nbgrader's markers and ours ("### STUB"), tool pragmas.
_MACHINE_COMMENT = re.compile(r"^###|^#\s*(noqa|type:|pragma|fmt:)|^#!")


@dataclass(frozen=True)
class Unit:
    """One translatable piece of one cell."""

    cell: str  # the cell id
    kind: str  # "md", "comment" or "docstring"
    text: str  # the English text (comments without their "# ", docstrings cleaned of indentation)
    line: int  # 1-based line in the cell where it starts

    @property
    def context(self) -> str:
        return f"{self.cell}:{self.kind}"


# ---------------------------------------------------------------------------------------------------------------
# markdown: blocks at blank lines


_FENCE = re.compile(r"^\s*(```|~~~)")


def markdown_blocks(text: str) -> list[tuple[str, str]]:
    """``text`` as [(block, separator after it)]; ``"".join(b + s for b, s in ...)`` gives ``text`` back exactly.

    Blank lines inside a fenced code block or a ``$$ ... $$`` display do not cut it."""
    lines = text.split("\n")
    blocks: list[tuple[str, str]] = []
    current: list[str] = []
    fence = display = False
    k = 0
    while k < len(lines):
        line = lines[k]
        if not fence and not display and line.strip() == "" and current:
            sep = ["\n"]  # the newline ending the block's last line
            while k < len(lines) and lines[k].strip() == "":
                sep.append(lines[k] + "\n")
                k += 1
            if k == len(lines):  # trailing blank lines: the last one has no newline of its own
                sep[-1] = sep[-1][:-1]
            blocks.append(("\n".join(current), "".join(sep)))
            current = []
            continue
        if _FENCE.match(line):
            fence = not fence
        elif not fence and line.strip() == "$$":
            display = not display
        elif not fence and line.strip().startswith("$$") and not line.strip().endswith("$$"):
            display = True
        elif not fence and display and line.strip().endswith("$$"):
            display = False
        current.append(line)
        k += 1
    if current:
        blocks.append(("\n".join(current), ""))
    elif blocks and not text.endswith("\n"):
        pass
    return blocks


# ---------------------------------------------------------------------------------------------------------------
# code: comments and docstrings


@dataclass(frozen=True)
class _CodePiece:
    kind: str
    text: str
    start: tuple[int, int]  # (line, col) of the first character to replace
    end: tuple[int, int]  # (line, col) after the last one
    indent: str  # for comments: what precedes "#" on the lines of the run


def _comment_runs(source: str) -> list[_CodePiece]:
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    lines = source.split("\n")
    pieces: list[_CodePiece] = []
    run: list[tokenize.TokenInfo] = []

    def close() -> None:
        if run:
            text = "\n".join(_comment_text(t.string) for t in run)
            pieces.append(_CodePiece("comment", text, run[0].start, run[-1].end, lines[run[0].start[0] - 1][:run[0].start[1]]))
            run.clear()

    for tok in tokens:
        if tok.type != tokenize.COMMENT:
            if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                close()
            continue
        if _MACHINE_COMMENT.match(tok.string) or not _comment_text(tok.string).strip():
            close()
            continue
        own_line = lines[tok.start[0] - 1][:tok.start[1]].strip() == ""
        if not own_line:  # a trailing comment is an entry of its own
            close()
            pieces.append(_CodePiece("comment", _comment_text(tok.string), tok.start, tok.end, ""))
            continue
        if run and (tok.start[0] != run[-1].start[0] + 1 or tok.start[1] != run[0].start[1]):
            close()
        run.append(tok)
    close()
    return pieces


def _comment_text(comment: str) -> str:
    return re.sub(r"^#\s?", "", comment)


def _docstrings(source: str) -> list[_CodePiece]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    lines = source.split("\n")

    def chars(line: int, byte_col: int) -> int:  # ast counts columns in UTF-8 bytes, tokenize in characters
        return len(lines[line - 1].encode()[:byte_col].decode())

    pieces = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                value = first.value
                pieces.append(_CodePiece("docstring", inspect.cleandoc(value.value), (value.lineno, chars(value.lineno, value.col_offset)),
                                         (value.end_lineno, chars(value.end_lineno, value.end_col_offset)),
                                         " " * value.col_offset))
    return pieces


def code_pieces(source: str) -> list[_CodePiece]:
    """The comments and docstrings of a code cell, in the order they appear (IPython magics are left alone)."""
    masked = "\n".join("pass  # magic" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n"))
    pieces = [p for p in _comment_runs(masked) if p.text != "magic"] + _docstrings(masked)
    return sorted(pieces, key=lambda p: p.start)


# ---------------------------------------------------------------------------------------------------------------
# a notebook's units, and the notebook rebuilt in another language


def units(nb: nbformat.NotebookNode) -> Iterator[Unit]:
    for cell in nb.cells:
        source = cell.source
        if cell.cell_type == "markdown":
            line = 1
            for block, sep in markdown_blocks(source):
                if block.strip():
                    yield Unit(cell.id, "md", block, line)
                line += block.count("\n") + sep.count("\n")
        elif cell.cell_type == "code":
            for piece in code_pieces(source):
                yield Unit(cell.id, piece.kind, piece.text, piece.start[0])


def _offset(lines: list[str], pos: tuple[int, int]) -> int:
    return sum(len(line) + 1 for line in lines[:pos[0] - 1]) + pos[1]


def _docstring_literal(original: str, text: str, indent: str) -> str:
    """A string literal for ``text`` written the way ``original`` (the English literal) was: same prefix and
    quotes, continuation lines at the docstring's indentation, a closing quote on its own line if it had one."""
    match = re.match(r"([rRuU]*)(\"\"\"|\'\'\'|\"|\')", original)
    assert match, original
    prefix, quote = match.groups()
    value = ast.literal_eval(original)
    if "r" not in prefix.lower():
        text = text.replace("\\", "\\\\")
    body = "\n".join(line if not line or k == 0 else indent + line for k, line in enumerate(text.split("\n")))
    if value.startswith("\n"):
        body = "\n" + indent + body
    trail = re.search(r"\n[ \t]*$", value)
    if trail:
        body += "\n" + indent
    return prefix + quote + body + quote


def translate_code(source: str, translations: dict[tuple[str, str], str]) -> str:
    """``source`` with each comment and docstring replaced by its translation (looked up by (kind, English))."""
    lines = source.split("\n")
    out = source
    for piece in reversed(code_pieces(source)):
        new = translations.get((piece.kind, piece.text))
        if new is None:
            continue
        start, end = _offset(lines, piece.start), _offset(lines, piece.end)
        if piece.kind == "docstring":
            out = out[:start] + _docstring_literal(source[start:end], new, piece.indent) + out[end:]
        elif piece.indent or piece.start[0] != piece.end[0] or lines[piece.start[0] - 1][:piece.start[1]].strip() == "":
            line_start = _offset(lines, (piece.start[0], 0))
            line_end = _offset(lines, (piece.end[0], len(lines[piece.end[0] - 1])))
            out = out[:line_start] + "\n".join(piece.indent + ("# " + t if t else "#") for t in new.split("\n")) + out[line_end:]
        else:
            out = out[:start] + "# " + " ".join(new.split("\n")) + out[end:]
    return out


def translate_markdown(source: str, translations: dict[str, str]) -> str:
    return "".join(translations.get(block, block) + sep for block, sep in markdown_blocks(source))


def translate_notebook(nb: nbformat.NotebookNode, po: polib.POFile, *, fallback: bool = False) -> nbformat.NotebookNode:
    """A copy of ``nb`` in the catalogue's language. Without ``fallback``, an untranslated or fuzzy entry is an
    error (``ValueError`` naming them); with it, the English text stays (for previews of an unfinished catalogue)."""
    nb = nbformat.from_dict(nb)
    table: dict[tuple[str, str], str] = {}
    for entry in po:
        if entry.obsolete:
            continue
        if entry.msgstr and "fuzzy" not in entry.flags:
            table[(entry.msgctxt, entry.msgid)] = entry.msgstr
    missing = []
    for cell in nb.cells:
        cell_table = {(ctx.split(":")[1], msgid): msgstr for (ctx, msgid), msgstr in table.items()
                      if ctx.split(":")[0] == cell.get("id")}
        wanted = [u for u in units(nbformat.from_dict({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))]
        missing += [u for u in wanted if (u.kind, u.text) not in cell_table]
        if cell.cell_type == "markdown":
            cell.source = translate_markdown(cell.source, {k[1]: v for k, v in cell_table.items() if k[0] == "md"})
        elif cell.cell_type == "code":
            cell.source = translate_code(cell.source, cell_table)
    if missing and not fallback:
        listed = "; ".join(f"{u.cell}:{u.kind} line {u.line}" for u in missing[:5])
        raise ValueError(f"{len(missing)} entries not translated (or fuzzy): {listed}")
    return nb


def template(nb_path: Path) -> polib.POFile:
    """The catalogue template (.pot) of one notebook: every unit once per (context, text)."""
    nb = nbformat.read(nb_path, as_version=4)
    pot = polib.POFile(wrapwidth=0)
    pot.metadata = {"Project-Id-Version": f"autograd-course {nb_path.stem}", "Content-Type": "text/plain; charset=UTF-8",
                    "Content-Transfer-Encoding": "8bit", "MIME-Version": "1.0"}
    seen: dict[tuple[str, str], polib.POEntry] = {}
    for unit in units(nb):
        key = (unit.context, unit.text)
        if key in seen:
            seen[key].occurrences.append((f"{nb_path.name}:{unit.cell}", str(unit.line)))
            continue
        entry = polib.POEntry(msgctxt=unit.context, msgid=unit.text, msgstr="",
                              occurrences=[(f"{nb_path.name}:{unit.cell}", str(unit.line))],
                              comment=_EXTRACTED[unit.kind])
        seen[key] = entry
        pot.append(entry)
    return pot


_EXTRACTED = {
    "md": "markdown: keep `code`, $LaTeX$, URLs, HTML tags and the markdown markup; translate the prose",
    "comment": "a Python comment: one line of Chinese per line is fine; keep names in backticks as they are",
    "docstring": "a docstring: keep parameter names, `code` and the first line short",
    "message": "feedback a student reads: keep every {field}, `code` and the markdown; the title is one sentence",
}


def messages_template() -> polib.POFile:
    """The grader's feedback sentences (``grader.spec.messages.EN``): a title and a hint per message key."""
    from grader.spec.messages import EN

    pot = polib.POFile(wrapwidth=0)
    pot.metadata = {"Project-Id-Version": "autograd-course messages", "Content-Type": "text/plain; charset=UTF-8",
                    "Content-Transfer-Encoding": "8bit", "MIME-Version": "1.0"}
    for key, message in EN.items():
        for part in ("title", "hint"):
            text = getattr(message, part)
            if text:
                pot.append(polib.POEntry(msgctxt=f"{key}.{part}", msgid=text, msgstr="", flags=["python-brace-format"],
                                         comment=_EXTRACTED["message"]))
    return pot


def notebooks() -> list[Path]:
    return sorted(SOURCE.glob("*.ipynb"))


def catalogue_path(lang: str, nb_path: Path) -> Path:
    return I18N / lang / f"{nb_path.stem}.po"


def catalogues(lang: str) -> list[Path]:
    """Every catalogue of ``lang``: one per notebook, then the grader's messages."""
    return [catalogue_path(lang, p) for p in notebooks()] + [I18N / lang / "messages.po"]


def extract(lang: str) -> None:
    """Write the templates and merge them into ``i18n/<lang>/``: new entries empty, changed ones fuzzy."""
    TEMPLATES.mkdir(parents=True, exist_ok=True)
    (I18N / lang).mkdir(parents=True, exist_ok=True)
    msgmerge = shutil.which("msgmerge")
    for name, make in [(p.stem, lambda p=p: template(p)) for p in notebooks()] + [("messages", messages_template)]:
        pot_path = TEMPLATES / f"{name}.pot"
        make().save(str(pot_path))
        po_path = I18N / lang / f"{name}.po"
        if not po_path.exists():
            po = polib.pofile(str(pot_path), wrapwidth=0)
            po.metadata["Language"] = lang
            po.save(str(po_path))
            print(f"{po_path.relative_to(ROOT)}: new catalogue, {len(po)} entries to translate")
            continue
        if msgmerge is None:
            sys.exit("msgmerge (GNU gettext) is missing: `apt-get install gettext` (make system-packages does it)")
        subprocess.run([msgmerge, "--quiet", "--previous", "--no-wrap", "--update", "--backup=none",
                        str(po_path), str(pot_path)], check=True)
        po = polib.pofile(str(po_path), wrapwidth=0)
        print(f"{po_path.relative_to(ROOT)}: {_counts(po)}")


def _counts(po: polib.POFile) -> str:
    live = [e for e in po if not e.obsolete]
    fuzzy = sum("fuzzy" in e.flags for e in live)
    done = sum(bool(e.msgstr) and "fuzzy" not in e.flags for e in live)
    words = sum(len(e.msgid.split()) for e in live)
    return f"{len(live)} entries ({words} English words): {done} translated, {fuzzy} fuzzy, {len(live) - done - fuzzy} missing"


# ---------------------------------------------------------------------------------------------------------------
# what a translation must keep


_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
_MATH = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$", re.S)
_URL = re.compile(r"https?://[^\s)>\"']+")
_FIELD = re.compile(r"(?<!\{)\{[A-Za-z_][A-Za-z0-9_]*(?:[.!:][^{}]*)?\}(?!\})")


def kept_tokens(text: str) -> dict[str, list[str]]:
    """What must appear unchanged in a translation of ``text``: code spans, LaTeX, URLs, format fields."""
    return {"code": sorted(m.group(0) for m in _CODE_SPAN.finditer(text)),
            "LaTeX": sorted(m.group(0) for m in _MATH.finditer(_CODE_SPAN.sub("", text))),
            "URL": sorted(_URL.findall(text)),
            "format field": sorted(_FIELD.findall(_CODE_SPAN.sub("", text)))}


def problems(entry: polib.POEntry) -> list[str]:
    """Why this translated entry cannot be used as it is (empty list: it can)."""
    if not entry.msgstr or "fuzzy" in entry.flags:
        return []
    found = []
    want, got = kept_tokens(entry.msgid), kept_tokens(entry.msgstr)
    for kind in want:
        missing = [t for t in want[kind] if t not in got[kind]]
        if missing:
            found.append(f"{kind} changed or missing: {', '.join(missing[:3])}")
    if entry.msgctxt and entry.msgctxt.endswith(":md"):
        for marker in ("#", "|", "- ", "* ", "> ", "<details", "</details>"):
            if entry.msgid.lstrip().startswith(marker) != entry.msgstr.lstrip().startswith(marker):
                found.append(f"the markdown starts differently ({marker!r})")
                break
    return found


def check(lang: str) -> int:
    bad = 0
    for po_path in catalogues(lang):
        if not po_path.exists():
            print(f"{po_path.relative_to(ROOT)}: missing (run `python -m grader.classroom.translation extract`)")
            bad += 1
            continue
        for entry in polib.pofile(str(po_path), wrapwidth=0):
            for problem in problems(entry):
                bad += 1
                print(f"{po_path.relative_to(ROOT)}: {entry.msgctxt} (line {entry.linenum}): {problem}")
    return 1 if bad else 0


def stats(lang: str) -> None:
    for po_path in catalogues(lang):
        if po_path.exists():
            print(f"{po_path.relative_to(ROOT)}: {_counts(polib.pofile(str(po_path), wrapwidth=0))}")


# What a translated notebook's set-up cell says last, generated by ``build``: its language, which every front end
# delivers to the kernel this way (not all of them say which notebook a kernel runs). {comment}: in that language.
DECLARATION = 'from grader import speak\nspeak("{lang}")  # {comment}'
DECLARATION_COMMENTS = {"zh": "这个笔记本的语言：自查和评分反馈都用中文（由 make release 生成）"}
SETUP_CELL = "setup"  # the grade_id of the locked set-up cell the declaration goes into


def declaration(lang: str) -> str:
    return DECLARATION.format(lang=lang, comment=DECLARATION_COMMENTS.get(lang, f"this notebook's language: {lang}"))


def _is_declaration(node: ast.stmt) -> bool:
    """``from grader import speak`` or ``speak("<lang>")``: the generated declaration (``DECLARATION``)."""
    if isinstance(node, ast.ImportFrom):
        return node.module == "grader" and [a.name for a in node.names] == ["speak"]
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "speak" and len(node.value.args) == 1 and not node.value.keywords
            and isinstance(node.value.args[0], ast.Constant))


def _without_docstrings(source: str) -> str:
    """The AST of a code cell with every docstring emptied (comments are not in an AST) and the generated language
    declaration left out: what translation keeps."""
    masked = "\n".join("pass" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n"))
    tree = ast.parse(masked)
    tree.body = [node for node in tree.body if not _is_declaration(node)]
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                first.value.value = ""
    return ast.dump(tree)


def build(lang: str, out: Path, fallback: bool = False) -> list[Path]:
    """Write ``out/<notebook>.ipynb`` for every notebook, in ``lang``; its code is the English code (checked)."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for nb_path in notebooks():
        nb = nbformat.read(nb_path, as_version=4)
        po = polib.pofile(str(catalogue_path(lang, nb_path)), wrapwidth=0)
        translated = translate_notebook(nb, po, fallback=fallback)
        for cell in translated.cells:
            if cell.cell_type == "code" and cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == SETUP_CELL:
                cell.source = cell.source.rstrip("\n") + "\n\n" + declaration(lang)
        translated.metadata["autograd_course"] = {
            "language": lang,
            "generated": f"from solutions/{SOURCE.name}/{nb_path.name} and i18n/{lang}/{nb_path.stem}.po by `make release`: "
                         "never edit by hand (edit the English, or the catalogue)"}
        for english, cell in zip(nb.cells, translated.cells):
            if cell.cell_type == "code":
                try:
                    same = _without_docstrings(english.source) == _without_docstrings(cell.source)
                except SyntaxError as exc:
                    raise ValueError(f"{nb_path.name}, cell {cell.id}: the translated cell is not Python any more "
                                     f"({exc.msg}, line {exc.lineno}): look at its comments and docstrings") from None
                if not same:
                    raise ValueError(f"{nb_path.name}, cell {cell.id}: translating changed the code itself")
        target = out / nb_path.name
        target.write_text(canonical(translated), encoding="utf-8")  # as `make release` keeps every notebook
        written.append(target)
    return written


def messages_module_path(lang: str) -> Path:
    return ROOT / "grader" / "spec" / f"messages_{lang}.py"


def messages_module(lang: str) -> str:
    """The Python source of ``grader/spec/messages_<lang>.py``: the catalogue's usable entries as plain data.

    Feedback is rendered inside the sandbox and in the student's kernel, where neither polib nor the repository's
    ``i18n/`` folder may be at hand (``pip install .``): the catalogue travels as a module of the package."""
    po = polib.pofile(str(I18N / lang / "messages.po"), wrapwidth=0)
    table: dict[str, dict[str, str]] = {}
    for entry in po:
        if entry.obsolete or not entry.msgstr or "fuzzy" in entry.flags or problems(entry):
            continue
        key, part = entry.msgctxt.rsplit(".", 1)
        table.setdefault(key, {})[part] = entry.msgstr
    lines = [f'"""The grader\'s messages in {lang!r}: generated from i18n/{lang}/messages.po by',
             "`python -m grader.classroom.translation compile`; never edit by hand (tests/test_translation.py",
             'regenerates it and fails on a difference). A key missing here is said in English."""', "",
             f"TABLE: dict[str, tuple[str, str]] = {{"]
    from grader.spec.messages import EN

    for key in EN:  # the English table's order
        if key in table and "title" in table[key] and ("hint" in table[key] or not EN[key].hint):
            lines.append(f"    {key!r}: ({table[key]['title']!r}, {table[key].get('hint', '')!r}),")
    lines.append("}")
    lines += ["", "# The notebooks' section headings (from their catalogues): a hint names the section as the "
              "student's notebook titles it.", "HEADINGS: dict[str, str] = {"]
    lines += [f"    {english!r}: {translated!r}," for english, translated in headings(lang).items()]
    lines.append("}")
    return "\n".join(lines) + "\n"


def headings(lang: str) -> dict[str, str]:
    """English section heading -> its translation, from the usable markdown entries of the notebooks' catalogues
    (a heading line of a markdown cell is paired with the translation's heading line at the same place)."""
    found: dict[str, str] = {}
    for nb_path in notebooks():
        path = catalogue_path(lang, nb_path)
        if not path.exists():
            continue
        for entry in polib.pofile(str(path), wrapwidth=0):
            if (entry.obsolete or not entry.msgstr or "fuzzy" in entry.flags or not entry.msgctxt.endswith(":md")
                    or problems(entry)):
                continue
            english = [line for line in entry.msgid.splitlines() if line.startswith("#")]
            translated = [line for line in entry.msgstr.splitlines() if line.startswith("#")]
            if len(english) != len(translated):
                continue
            for e, t in zip(english, translated):
                found.setdefault(e.lstrip("#").strip(), t.lstrip("#").strip())
    return found


def compile_messages(lang: str) -> Path:
    path = messages_module_path(lang)
    path.write_text(messages_module(lang), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.classroom.translation", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["extract", "stats", "check", "build", "compile"])
    parser.add_argument("--lang", default="zh")
    parser.add_argument("--out", type=Path, help="build: where to write the notebooks (default: solutions/autograd-LANG)")
    parser.add_argument("--fallback", action="store_true", help="build: keep the English where a translation is missing")
    args = parser.parse_args(argv)
    if args.command == "build":
        try:
            written = build(args.lang, args.out or SOURCE.with_name(f"{SOURCE.name}-{args.lang}"), args.fallback)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        for path in written:
            print(path)
    elif args.command == "extract":
        extract(args.lang)
    elif args.command == "compile":
        print(compile_messages(args.lang).relative_to(ROOT))
    elif args.command == "stats":
        stats(args.lang)
    else:
        return check(args.lang)
    return 0


if __name__ == "__main__":
    sys.exit(main())
