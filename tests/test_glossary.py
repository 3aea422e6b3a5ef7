"""The glossary (i18n/zh/glossary.tsv, issue 23) is kept: wherever an English entry of a catalogue uses a glossary term,
its Chinese uses that term's Chinese, and every term of the glossary is used somewhere.

A term is found in the English by word (case-insensitive, a plural -s/-es included, a space or a hyphen between its
words), longest term first (so "vector-Jacobian product" is not also read as "Jacobian"), and only in prose: code
(backticked or written bare, like `torch.autograd.grad`, `len(batches)`, `[batch, in]`, `weight:` naming an argument),
LaTeX, URLs, format fields and quoted text (error messages and document titles, kept in English) are left out. A term
written with a capital (Jacobian, Hessian) is a proper name and is found only with it: `jacobian` alone is code.
"""

from __future__ import annotations

import re
from pathlib import Path

import polib
import pytest

ROOT = Path(__file__).resolve().parents[1]
ZH = ROOT / "i18n" / "zh"
CATALOGUES = sorted(ZH.glob("*.po"))

# Where the glossary's note allows another Chinese word for one sense of the English term. (term, accepted, why)
ALTERNATIVES = [
    ("batch", "批处理", "the verb (vmap batches a Function): the glossary's 批次 is the noun"),
    ("worker", "工作节点", "a Dask worker, a machine of the cluster (the glossary's note): 工作进程 is a grading process"),
]
# English phrases where the word is not the glossary's concept. (term, phrase, why)
OTHER_SENSES = [
    ("entry", "entry point", "the start of the recorded graph, not an element of a tensor"),
    ("entry", "on entry", "when the function starts, not an element of a tensor"),
    ("shape", "the shape of it", "an idiom (what it looks like), not a tensor's shape"),
    ("notebook", "a little notebook", "ctx likened to a notepad, not a Jupyter notebook"),
    ("weight", "to weight", "the verb (how much each entry counts), not a layer's weight"),
]


def glossary() -> list[tuple[str, str, str]]:
    rows = [line.split("\t") for line in (ZH / "glossary.tsv").read_text(encoding="utf-8").splitlines()
            if line and not line.startswith("#")]
    return [(row[0], row[1], row[2] if len(row) > 2 else "") for row in rows]


def term_pattern(english: str) -> re.Pattern:
    words = r"[\s-]+".join(re.escape(w) for w in re.split(r"[\s-]+", english))
    flags = 0 if english[0].isupper() else re.IGNORECASE
    return re.compile(r"(?<![\w.-])" + words + r"(?:s|es)?(?![\w-])", flags)


_NOT_PROSE = [
    re.compile(r"(`+).+?\1", re.S),                             # code spans
    re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$", re.S),               # LaTeX
    re.compile(r"https?://\S+"),                                # URLs
    re.compile(r"\{[^{}\s]*\}"),                                # format fields
    re.compile(r'"[^"]{0,200}"|“[^”]*”|\'[\w ,.-]*\''),          # quoted: error messages, document titles, names
    re.compile(r"[\w.]*\w\((?:[^()]|\([^()]*\))*\)"),           # calls: len(batches), loss_fn(w, batch)
    re.compile(r"\([^()]*(?:[=*@+]| - )[^()]*\)"),              # code in parentheses: (0 = input, 1 = weight)
    re.compile(r"\w+(?:\.\w+)+"),                               # dotted names: torch.autograd.grad, weight.T
    re.compile(r"\w+\s*=|\b\w+(?= is (?:None|\[))|@ \w+|\w+[ᵀ²³]"), # code written bare: penalty = ..., bias is None
    re.compile(r"\[[^\[\]\n]*\]|\((?:\w+, )+\w+\)"),              # indexing, shapes, tuples: [batch, in]
    re.compile(r"^\s*\w+:", re.M),                              # a docstring's argument names
]


def prose(english: str) -> str:
    for pattern in _NOT_PROSE:
        english = pattern.sub(" ", english)
    return english


def _compact(chinese: str) -> str:
    """The Chinese without the line breaks and indentation a docstring wraps its lines with."""
    return re.sub(r"\s*\n\s*", "", chinese)


def violations(terms, english: str, chinese: str) -> list[tuple[str, str]]:
    """(term, matched words) for every glossary term the English uses and the Chinese does not."""
    text, found, chinese = prose(english), [], _compact(chinese)
    for phrase_term, phrase, _ in OTHER_SENSES:
        text = re.sub(re.escape(phrase), lambda m: m.group(0).replace(phrase_term, " " * len(phrase_term)), text,
                      flags=re.IGNORECASE)
    for term, target, _ in sorted(terms, key=lambda t: -len(t[0])):
        pattern = term_pattern(term)
        match = pattern.search(text)
        if match is None:
            continue
        text = pattern.sub(" ", text)
        accepted = [target] + [alt for t, alt, _ in ALTERNATIVES if t == term]
        if not any(word in chinese for word in accepted):
            found.append((term, match.group(0)))
    return found


def entries():
    for path in CATALOGUES:
        for entry in polib.pofile(str(path), wrapwidth=0):
            if entry.msgstr and not entry.obsolete:
                yield path.name, entry


def test_the_glossary_is_checked_against_every_catalogue():
    assert [p.name for p in CATALOGUES] == ["01_autograd_basics.po", "02_custom_function.po",
                                           "03_double_backward.po", "04_modern_functions.po",
                                           "05_markers_and_capstone.po", "06_labs.po", "messages.po"]
    assert sum(1 for _ in entries()) > 1000


def test_the_matcher_reads_prose_and_leaves_code_quotes_and_other_senses_out():
    terms = [("batch", "批次", ""), ("Jacobian", "雅可比矩阵", ""), ("vector-Jacobian product", "向量-雅可比积", ""),
             ("entry", "元素", ""), ("autograd", "自动微分", "")]
    assert violations(terms, "Sum over the batch.", "对整个批求和。") == [("batch", "batch")]
    assert violations(terms, "Two batches.", "两个批次。") == []
    assert violations(terms, "How to batch it (vmap).", "如何对它做批处理。") == []       # an alternative
    assert violations(terms, "The vector-Jacobian products.", "向量-雅可比积。") == []    # not also "Jacobian"
    assert violations(terms, "`batch` and loss_fn(w, batch) and [batch, in].", "代码。") == []
    assert violations(terms, "Use torch.autograd.grad (or torch.func.jacobian).", "用 torch.autograd.grad。") == []
    assert violations(terms, 'It raises "the batch is empty".', "它抛出 \"the batch is empty\"。") == []
    assert violations(terms, "the entry point, and each entry", "入口，以及每个元素") == []
    assert violations(terms, "the entry point, and each entry", "入口，以及每一项") == [("entry", "entry")]


def test_every_entry_that_uses_a_glossary_term_uses_its_chinese():
    terms = glossary()
    problems = [f"{name} {entry.msgctxt}: {term!r} ({words!r} in the English) is not {target!r} in the Chinese"
                for name, entry in entries() for term, words in violations(terms, entry.msgid, entry.msgstr)
                for target in [dict((t, c) for t, c, _ in terms)[term]]]
    assert not problems, (f"{len(problems)} entries do not use the glossary's term (i18n/zh/glossary.tsv): fix the "
                          "msgstr, or the glossary if its term is not the one to use:\n" + "\n".join(problems))


def test_every_glossary_term_is_used_by_some_catalogue():
    english = [prose(entry.msgid) for _, entry in entries()]
    unused = [term for term, _, _ in glossary() if not any(term_pattern(term).search(text) for text in english)]
    assert not unused, f"glossary terms no catalogue uses (remove them from i18n/zh/glossary.tsv): {unused}"


@pytest.mark.parametrize("term, accepted, why", ALTERNATIVES + [(t, p, w) for t, p, w in OTHER_SENSES])
def test_every_exception_names_a_glossary_term_and_a_reason(term, accepted, why):
    assert term in {t for t, _, _ in glossary()} and accepted and len(why) > 20
