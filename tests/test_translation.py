"""The translation catalogues (issue 23): cutting the English into entries is exact, translating never touches code,
an English edit marks its translation fuzzy, and `check` refuses a translation that lost what it must keep."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import polib
import pytest

from grader.classroom import translation

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = translation.notebooks()


def test_the_course_has_its_five_notebooks_to_translate():
    assert [p.name for p in NOTEBOOKS] == ["01_autograd_basics.ipynb", "02_custom_function.ipynb",
                                           "03_double_backward.ipynb", "04_modern_functions.ipynb",
                                           "05_markers_and_capstone.ipynb", "06_labs.ipynb"]


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_catalogue_whose_every_entry_is_its_english_rebuilds_the_notebook_byte_for_byte(nb_path):
    nb = nbformat.read(nb_path, as_version=4)
    pot = translation.template(nb_path)
    assert len(pot) > (50 if nb_path.name == "06_labs.ipynb" else 100)  # the labs: 76 entries
    for entry in pot:
        entry.msgstr = entry.msgid
    rebuilt = translation.translate_notebook(nb, pot)
    assert [c.source for c in rebuilt.cells] == [c.source for c in nb.cells]


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.stem)
def test_translating_every_comment_and_docstring_keeps_the_code_and_changes_every_prose_line(nb_path):
    nb = nbformat.read(nb_path, as_version=4)
    pot = translation.template(nb_path)
    for entry in pot:  # a "translation" of several lines, with a backslash: the worst a translator can write
        entry.msgstr = "译\\文\n" + entry.msgid
    rebuilt = translation.translate_notebook(nb, pot)
    for english, translated in zip(nb.cells, rebuilt.cells):
        if english.cell_type == "code":
            assert translation._without_docstrings(english.source) == translation._without_docstrings(translated.source)
        kinds = {u.kind for u in translation.units(nbformat.v4.new_notebook(cells=[english]))}
        assert ("译" in translated.source) == bool(kinds), english.id


def test_markdown_blocks_are_cut_at_blank_lines_but_not_inside_code_or_display_math():
    text = "# Title\n\nA paragraph\non two lines.\n\n```python\nx = 1\n\ny = 2\n```\n\n$$\na\n\nb\n$$\n\n\n| a | b |\n|---|---|\n"
    blocks = translation.markdown_blocks(text)
    assert "".join(b + s for b, s in blocks) == text
    assert [b for b, _ in blocks] == ["# Title", "A paragraph\non two lines.", "```python\nx = 1\n\ny = 2\n```",
                                      "$$\na\n\nb\n$$", "| a | b |\n|---|---|"]


def test_comments_are_entries_per_run_and_machine_markers_are_not():
    source = ('# Compute the output\n# of the layer.\nout = x @ w  # the product\n### BEGIN SOLUTION\n'
              'def f(x):\n    """Square x.\n\n    Returns x²."""\n    return x * x  # noqa: E501\n### END SOLUTION\n')
    pieces = [(p.kind, p.text) for p in translation.code_pieces(source)]
    assert pieces == [("comment", "Compute the output\nof the layer."), ("comment", "the product"),
                      ("docstring", "Square x.\n\nReturns x².")]
    out = translation.translate_code(source, {("comment", "Compute the output\nof the layer."): "计算这一层的输出。",
                                              ("comment", "the product"): "乘积",
                                              ("docstring", "Square x.\n\nReturns x²."): "x 的平方。\n\n返回 x²。"})
    assert out == ('# 计算这一层的输出。\nout = x @ w  # 乘积\n### BEGIN SOLUTION\n'
                   'def f(x):\n    """x 的平方。\n\n    返回 x²。"""\n    return x * x  # noqa: E501\n### END SOLUTION\n')


@pytest.mark.parametrize("msgid, msgstr, problem", [
    ("Call `backward()` once.", "调用一次 backward()。", "code changed or missing: `backward()`"),
    ("The slope is $\\frac{dy}{dx}$.", "斜率是 dy/dx。", "LaTeX changed or missing"),
    ("{function} is not implemented yet.", "{函数} 还没有实现。", "format field changed or missing: {function}"),
    ("See https://pytorch.org/docs.", "见 PyTorch 文档。", "URL changed or missing"),
    ("## Section 2", "第 2 节", "the markdown starts differently"),
])
def test_check_refuses_a_translation_that_lost_what_it_must_keep(msgid, msgstr, problem):
    entry = polib.POEntry(msgctxt="cell:md", msgid=msgid, msgstr=msgstr)
    assert any(p.startswith(problem) for p in translation.problems(entry)), translation.problems(entry)
    entry.msgstr = msgid
    assert translation.problems(entry) == []


@pytest.mark.skipif(shutil.which("msgmerge") is None, reason="GNU gettext's msgmerge is missing: apt-get install gettext")
def test_an_english_edit_marks_its_translation_fuzzy_and_a_fuzzy_entry_is_not_used(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "Gradients accumulate in `.grad`.\n\nCall `zero_()` between steps.", id="intro")])
    english = tmp_path / "solutions" / "autograd"
    english.mkdir(parents=True)
    nbformat.write(nb, english / "01_x.ipynb")
    script = ("import sys; from pathlib import Path; from grader.classroom import translation as t\n"
              f"t.SOURCE = Path({str(english)!r}); t.I18N = Path({str(tmp_path / 'i18n')!r}); "
              "t.TEMPLATES = t.I18N / 'templates'; t.ROOT = Path('/')\n"
              "t.extract('zh')\n")
    run = lambda: subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True, capture_output=True, text=True)
    run()
    po_path = tmp_path / "i18n" / "zh" / "01_x.po"
    po = polib.pofile(str(po_path), wrapwidth=0)
    po[0].msgstr, po[1].msgstr = "梯度会累积在 `.grad` 中。", "在两步之间调用 `zero_()`。"
    po.save()
    nb.cells[0].source = "Gradients accumulate in `.grad` (they add up).\n\nCall `zero_()` between steps."
    nbformat.write(nb, english / "01_x.ipynb")
    run()
    po = polib.pofile(str(po_path), wrapwidth=0)
    edited = po.find("Gradients accumulate in `.grad` (they add up).", msgctxt="intro:md")
    assert "fuzzy" in edited.flags and edited.previous_msgid == "Gradients accumulate in `.grad`."
    assert po.find("Call `zero_()` between steps.", msgctxt="intro:md").msgstr == "在两步之间调用 `zero_()`。"
    with pytest.raises(ValueError, match="1 entries not translated"):
        translation.translate_notebook(nb, po)
    previewed = translation.translate_notebook(nb, po, fallback=True)
    assert previewed.cells[0].source == "Gradients accumulate in `.grad` (they add up).\n\n在两步之间调用 `zero_()`。"


def test_the_committed_templates_are_what_extraction_gives_today():
    """Like nbdev's generated files: an English edit without `translation extract` fails here."""
    for nb_path in NOTEBOOKS:
        committed = polib.pofile(str(translation.TEMPLATES / f"{nb_path.stem}.pot"), wrapwidth=0)
        fresh = translation.template(nb_path)
        assert [(e.msgctxt, e.msgid) for e in committed] == [(e.msgctxt, e.msgid) for e in fresh], (
            f"i18n/templates/{nb_path.stem}.pot is stale: run `python -m grader.classroom.translation extract`")


def test_the_glossary_has_one_chinese_term_per_english_term():
    rows = [line.split("\t") for line in (ROOT / "i18n" / "zh" / "glossary.tsv").read_text().splitlines()
            if line and not line.startswith("#")]
    english = [row[0] for row in rows]
    assert len(english) == len(set(english)) and len(rows) >= 40
    assert all(len(row) >= 2 and row[1].strip() for row in rows)


def test_the_compiled_chinese_messages_are_the_catalogues_and_every_key_keeps_its_fields():
    """grader/spec/messages_zh.py is generated (never edited): regenerating it gives the committed file, and every
    message has a Chinese title and hint with exactly the English fields."""
    from grader.spec import messages

    module = translation.messages_module_path("zh")
    assert module.read_text(encoding="utf-8") == translation.messages_module("zh"), (
        "grader/spec/messages_zh.py is stale: run `python -m grader.classroom.translation compile`")
    fields = lambda text: sorted(set(translation._FIELD.findall(translation._CODE_SPAN.sub("", text))))
    missing = [key for key in messages.EN if key not in messages.TABLES["zh"]]
    assert not missing, f"messages without a Chinese entry in i18n/zh/messages.po: {missing[:10]}"
    for key, english in messages.EN.items():
        chinese = messages.message(key, "zh")
        for part in ("title", "hint"):
            assert fields(getattr(chinese, part)) == fields(getattr(english, part)), (key, part)
