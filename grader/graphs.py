"""Draw autograd graphs inline with torchviz, or say why not."""

from __future__ import annotations

import os
import shutil
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

    return SVG(graph.pipe(format="svg"))
