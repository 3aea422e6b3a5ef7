"""Graphs are drawn inline as SVG; without Graphviz's `dot` the notebook says so and goes on."""

from __future__ import annotations

import shutil

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
