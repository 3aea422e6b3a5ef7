"""Draw autograd graphs inline with torchviz, or say why not."""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
import warnings
from typing import Any, Mapping

import torch

NO_DOT = (
    "[graph not drawn] Graphviz's `dot` program is not installed, so torchviz cannot render "
    "this graph. Install it with `make install` (or `apt-get install graphviz`) and re-run the "
    "cell. The notebook continues without the picture; the graph in text form:"
)


def draw(outputs: torch.Tensor | tuple[torch.Tensor, ...], params: Mapping[str, torch.Tensor] | None = None) -> Any:
    """Return the autograd graph of ``outputs`` as an inline SVG (``params`` names tensors in the picture).

    Where Graphviz's ``dot`` is missing, prints a short note and the graph's nodes instead of failing.
    """
    if os.environ.get("GRADER_NO_DRAW"):  # autograding: pictures are for people, not for scores
        return None
    import torchviz  # imported here: only notebooks that draw pay for it

    with warnings.catch_warnings():  # torchviz 0.0.3 uses distutils' deprecated Version: not the student's concern
        warnings.simplefilter("ignore", DeprecationWarning)
        graph = torchviz.make_dot(outputs, params=dict(params or {}))
    if shutil.which("dot") is None:
        print(NO_DOT)
        print("\n".join(line for line in graph.source.splitlines() if "label=" in line))
        return None
    from IPython.display import SVG

    _dot_without_threads()
    return SVG(graph.pipe(format="svg"))


def show(outputs: torch.Tensor | tuple[torch.Tensor, ...], params: Mapping[str, torch.Tensor] | None = None) -> None:
    """Display the graph of ``outputs`` right away, from anywhere in a cell (inside a ``with`` block, say).

    ``draw`` returns the picture, which Jupyter shows only when it is the cell's last value."""
    picture = draw(outputs, params)
    if picture is not None:
        from IPython.display import display

        display(picture)


THREADLESS_PLUGINS = ("core", "dot_layout")


def _dot_without_threads() -> None:
    """In the grading sandbox, threads are refused, and Graphviz's pango text plugin starts one (then dot
    aborts). There, dot gets a plugin configuration of its own (GVBINDIR) with only the plugins that draw
    SVG without threads; labels are then measured with Graphviz's own font metrics."""
    if not os.environ.get("GRADER_SANDBOXED") or os.environ.get("GVBINDIR"):
        return
    configs = sorted(glob.glob("/usr/lib/*/graphviz/config6*") + glob.glob("/usr/lib/graphviz/config6*"))
    if not configs:
        return
    folder = os.path.dirname(configs[0])
    kept, keep = [], False
    with open(configs[0], encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("libgvplugin_"):
                keep = any(f"_{name}." in line.split()[0] for name in THREADLESS_PLUGINS)
                line = os.path.join(folder, line)
            if keep:
                kept.append(line)
    target = os.path.join(tempfile.gettempdir(), "grader-graphviz")
    os.makedirs(target, exist_ok=True)
    with open(os.path.join(target, os.path.basename(configs[0])), "w", encoding="utf-8") as f:
        f.writelines(kept)
    os.environ["GVBINDIR"] = target
