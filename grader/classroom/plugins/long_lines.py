"""``WrapLongLines``: long output lines wrapped in the feedback."""

from __future__ import annotations

from typing import Any

from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import List


class WrapLongLines(NbGraderPreprocessor):
    """For feedback (after nbconvert's CSSHTMLHeaderPreprocessor): CSS that wraps long lines in the page, so a
    diagnosis, a hint, a traceback or a long line of code never makes the page scroll sideways (nbconvert's
    classic template keeps each output line on one line, ``white-space: pre``)."""

    css = """
div.output_area pre, div.output_subarea pre, div.input_area pre, div.text_cell_render pre, pre {
  white-space: pre-wrap; overflow-wrap: anywhere; word-break: normal;
}
div.output_subarea, div.input_area, div.inner_cell, div.text_cell_render { min-width: 0; overflow-wrap: anywhere; }
div.output_subarea { max-width: 100%; }
div.output_subarea img, div.output_subarea svg, div.text_cell_render img { max-width: 100%; height: auto; }
div.nbgrader_cell .panel-heading { height: auto; min-height: 37px; }
"""
    display_data_priority = List(["text/html", "application/pdf", "text/latex", "image/svg+xml", "image/png",
                                  "image/jpeg", "text/plain"]).tag(config=True)  # (as HideHiddenTests)

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        resources.setdefault("inlining", {}).setdefault("css", []).append(self.css)
        return nb, resources
