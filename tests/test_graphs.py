"""Graphs are drawn inline as SVG; without Graphviz's `dot` the notebook says so and goes on."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
import torch

from grader import graphs


def small_graph():
    x = torch.tensor(2.0, requires_grad=True)
    return x * x + 1, x


def test_without_dot_the_graph_is_described_not_drawn(monkeypatch, capsys):
    monkeypatch.setattr(graphs.shutil, "which", lambda name: None)
    out, x = small_graph()
    assert graphs.draw(out, {"x": x}) is None
    printed = capsys.readouterr().out
    assert "Graphviz's `dot` program is not installed" in printed and "make install" in printed
    assert "AddBackward0" in printed and "MulBackward0" in printed


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_with_dot_the_graph_is_an_inline_svg():
    out, x = small_graph()
    svg = graphs.draw(out, {"x": x})
    assert "<svg" in svg.data and "MulBackward0" in svg.data


# --- Chinese in figures (issue 23) -----------------------------------------------------------------------------------

CHINESE = "权重梯度"


def _font_file(fontname: str) -> str:
    """The file fontconfig (what Graphviz's pango asks) gives for a Graphviz fontname."""
    assert shutil.which("fc-match"), "fontconfig's fc-match is missing (Debian's fontconfig): `make install`"
    return subprocess.run(["fc-match", "-f", "%{file}", fontname], capture_output=True, text=True, check=True).stdout


def test_a_chinese_name_in_a_graph_is_drawn_with_a_font_that_has_its_glyphs(capfd):
    """A student names a tensor in Chinese: the SVG holds the name, in a font whose file has every one of its
    glyphs (no empty boxes), and dot says nothing."""
    assert shutil.which("dot"), "Graphviz's dot is missing: `make install` (apt-get install graphviz)"
    from matplotlib.ft2font import FT2Font

    out, x = small_graph()
    svg = graphs.draw(out, {CHINESE: x}).data
    assert CHINESE in svg and f'font-family="{graphs.GRAPH_CJK_FONT}"' in svg
    font = _font_file(graphs.GRAPH_CJK_FONT)
    glyphs = FT2Font(font).get_charmap()
    missing = [c for c in CHINESE if ord(c) not in glyphs]
    assert not missing, (f"Graphviz draws {CHINESE!r} with {font}, which has no glyph for {missing}: install "
                         "fonts-noto-cjk (`make install`)")
    assert capfd.readouterr().err == ""


def test_an_english_graph_keeps_graphvizs_own_font():
    out, x = small_graph()
    import torchviz

    assert not graphs.has_cjk(torchviz.make_dot(out, params={"x": x}).source)
    if shutil.which("dot"):
        assert 'font-family="monospace"' in graphs.draw(out, {"x": x}).data  # torchviz's choice


PLOT = """
import warnings
warnings.simplefilter("error")          # matplotlib's "Glyph ... missing from font(s)" is a UserWarning: an error here
{imports}
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
figure, axes = plt.subplots()
axes.plot([1, 2, 3], label="{text}")
axes.set_title("{text} ∇ₓD")
axes.set_xlabel("{text}")
axes.legend()
figure.savefig({png!r})
print(matplotlib.rcParams["font.family"])
"""


@pytest.mark.parametrize("imports", ["import grader.graphs", "import matplotlib\nimport grader.graphs",
                                     "import matplotlib.pyplot\nimport grader.graphs", ""],
                         ids=["graphs-first", "matplotlib-first", "pyplot-first", "without-grader"])
def test_matplotlib_draws_chinese_with_no_missing_glyph_once_the_graphs_module_is_imported(imports, tmp_path):
    """In any order of imports (notebook 4 imports pyplot first; a student plotting in notebooks 1-3 imports it after
    the setup cell). Without grader.graphs, matplotlib's own font has no Chinese glyph: the control."""
    png = tmp_path / "figure.png"
    run = subprocess.run([sys.executable, "-c", PLOT.format(imports=imports, text=CHINESE, png=str(png))],
                         capture_output=True, text=True, timeout=120)
    if not imports:
        assert run.returncode != 0 and "missing from font(s)" in run.stderr, run.stderr[-2000:]
        return
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Noto Sans CJK SC" in run.stdout and png.stat().st_size > 5000


def test_a_font_list_cached_before_the_font_was_installed_still_gets_it(monkeypatch):
    """matplotlib caches its list of fonts per user and never rebuilds it for a new font: the file is added."""
    import matplotlib
    from matplotlib import font_manager

    monkeypatch.setattr(font_manager.fontManager, "ttflist",
                        [f for f in font_manager.fontManager.ttflist if "CJK" not in f.name])
    monkeypatch.setitem(matplotlib.rcParams, "font.family", ["sans-serif"])
    assert graphs.cjk_font_file(), "fonts-noto-cjk is not installed: `make install` (apt-get install fonts-noto-cjk)"
    assert graphs.use_cjk_font_in_matplotlib() == "Noto Sans CJK SC"
    assert matplotlib.rcParams["font.family"] == ["sans-serif", "Noto Sans CJK SC"]


FIGURE_TEXT = {"set_title", "set_xlabel", "set_ylabel", "title", "xlabel", "ylabel", "suptitle", "text", "annotate",
               "set_label", "legend"}


def test_every_word_in_a_figure_of_the_notebooks_is_a_name_from_its_code():
    """The figures stay language-neutral: their text is code (the same in the Chinese notebooks, whose code is the
    English code) or a proper name, never an English phrase a Chinese student would get untranslated."""
    import ast

    import nbformat

    from conftest import REPO

    proper_names = {"WGAN-GP"}
    texts = []
    for path in sorted((REPO / "solutions" / "autograd").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code" or "plt" not in cell.source:
                continue
            names = {n.id for n in ast.walk(ast.parse(cell.source)) if isinstance(n, ast.Name)}
            names |= {n.name for n in ast.walk(ast.parse(cell.source)) if isinstance(n, ast.FunctionDef)}
            for call in (n for n in ast.walk(ast.parse(cell.source)) if isinstance(n, ast.Call)):
                name = getattr(call.func, "attr", getattr(call.func, "id", ""))
                shown = ([a for a in call.args if name in FIGURE_TEXT]
                         + [k.value for k in call.keywords if k.arg == "label"])
                for node in shown:
                    if isinstance(node, ast.Constant) and isinstance(node.value, str):
                        texts.append((path.name, node.value, names))
    assert len(texts) >= 8, texts
    for notebook, text, names in texts:
        if text in proper_names:
            continue
        used = {n.id for n in ast.walk(ast.parse(text, mode="eval")) if isinstance(n, ast.Name)}
        assert used and used <= names, f"{notebook}: the figure shows {text!r}, which is not a name from its code"
