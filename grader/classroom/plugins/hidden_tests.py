"""``HideHiddenTests``: hidden tests' source kept out of the feedback."""

from __future__ import annotations

import re
from typing import Any

from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import List


class HideHiddenTests(NbGraderPreprocessor):
    """For feedback: hidden tests' code becomes one comment line; their names, outcomes and diagnoses stay
    in the cell's output (nbgrader's feedback otherwise shows their source, nbgrader issue #917)."""

    placeholder = "# hidden checks on other inputs: their names and outcomes are in the output below"
    # nbconvert configures display_data_priority on every preprocessor (NbConvertBase); nbgrader's base class
    # re-declares it without config=True, so traitlets warned "Config option `display_data_priority` not
    # recognized by `HideHiddenTests`" on each generate_feedback. Declared configurable, as nbgrader's GetGrades does.
    display_data_priority = List(["text/html", "application/pdf", "text/latex", "image/svg+xml", "image/png",
                                  "image/jpeg", "text/plain"]).tag(config=True)

    def preprocess_cell(self, cell: Any, resources: dict[str, Any], index: int) -> tuple[Any, dict[str, Any]]:
        if cell.cell_type == "code" and cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
            lines, kept, hidden = cell.source.split("\n"), [], False
            for line in lines:
                if "BEGIN HIDDEN TESTS" in line:
                    hidden = True
                    kept.append(re.match(r"\s*", line).group(0) + self.placeholder)  # type: ignore[union-attr]
                elif "END HIDDEN TESTS" in line:
                    hidden = False
                elif not hidden:
                    kept.append(line)
            cell.source = "\n".join(kept)
        return cell, resources
