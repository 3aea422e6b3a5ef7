"""What a student's cells showed, made safe to write into the notebooks nbgrader keeps.

The sandboxed child reports each code cell's outputs (``grader.child.Outputs``): streams, rich display data,
errors with their traceback. They come from untrusted code, so here, on the trusted side, they are rebuilt
from scratch as valid nbformat outputs: known output types only, strings only, sizes capped again, images
checked to be base64, and never HTML or SVG markup of the student's own. An SVG (an autograd graph) becomes
an ``<img>`` of it, so it still shows in formgrader and in the feedback page but cannot run a script there
(an inline ``<svg>`` could, in the instructor's browser).
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from typing import Any

CELL_BYTES = 300_000  # per cell (the child cuts at 256 kB and says so)
NOTEBOOK_BYTES = 2_500_000
BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]*$")


def source_key(source: str) -> str:
    """Which cell outputs belong to: its source (positions may differ between the file and nbgrader's copy)."""
    return hashlib.sha256(source.encode("utf-8", errors="replace")).hexdigest()


def sanitize(raw: Any, budget: list[int]) -> list[dict[str, Any]]:
    """nbformat outputs rebuilt from what the child sent; ``budget`` ([bytes left in the notebook]) shrinks."""
    kept: list[dict[str, Any]] = []
    used = 0
    for item in raw if isinstance(raw, list) else []:
        output = _one(item)
        if output is None:
            continue
        size = len(repr(output))
        if used + size > CELL_BYTES or size > budget[0]:
            kept.append({"output_type": "stream", "name": "stderr", "text": "[more output not kept]\n"})
            break
        used += size
        budget[0] -= size
        kept.append(output)
    return kept


def _text(value: Any, limit: int = CELL_BYTES) -> str | None:
    return value[:limit] if isinstance(value, str) else None


def _one(item: Any) -> dict[str, Any] | None:
    if not isinstance(item, dict):
        return None
    kind = item.get("output_type")
    if kind == "stream" and item.get("name") in ("stdout", "stderr") and _text(item.get("text")) is not None:
        return {"output_type": "stream", "name": item["name"], "text": _text(item["text"])}
    if kind == "error":
        trace = item.get("traceback")
        lines = [line[:5000] for line in trace[-60:] if isinstance(line, str)] if isinstance(trace, list) else []
        return {"output_type": "error", "ename": _text(item.get("ename"), 200) or "Error",
                "evalue": _text(item.get("evalue"), 2000) or "", "traceback": lines}
    if kind in ("display_data", "execute_result") and isinstance(item.get("data"), dict):
        data = _data(item["data"])
        if not data:
            return None
        output: dict[str, Any] = {"output_type": kind, "data": data, "metadata": {}}
        if kind == "execute_result":
            output["execution_count"] = None
        return output
    return None


def _data(data: dict[str, Any]) -> dict[str, str]:
    kept: dict[str, str] = {}
    plain = _text(data.get("text/plain"), 20_000)
    if plain is not None:
        kept["text/plain"] = plain
    for mime in ("image/png", "image/jpeg"):
        value = data.get(mime)
        if isinstance(value, str) and BASE64.match(value):
            kept[mime] = value
            # Built here, never the student's HTML: the image with the text the cell showed for it as alternative
            # text ("<Figure size 640x480 with 1 Axes>"), so that feedback pages are accessible (nbconvert's lab
            # template gives a PNG no alt and warns for every one).
            alt = html.escape((plain or "a figure the cell drew").strip()[:200], quote=True)
            kept.setdefault("text/html", f'<img alt="{alt}" src="data:{mime};base64,{value.strip()}"/>')
    latex = _text(data.get("text/latex"), 20_000)
    if latex is not None:
        kept["text/latex"] = latex
    svg = data.get("image/svg+xml")
    if isinstance(svg, str) and svg.strip():
        encoded = base64.b64encode(svg.encode("utf-8", errors="replace")).decode()
        kept["text/html"] = f'<img alt="graph" src="data:image/svg+xml;base64,{html.escape(encoded)}"/>'
    return kept
