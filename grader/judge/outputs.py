"""What a student's cells showed, made safe to write into the notebooks nbgrader keeps.

The sandboxed child reports each code cell's outputs (``grader.sandboxed.shell.Outputs``): streams, rich display data,
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


# --- the instructor's absolute paths, as students are shown them ---------------------------------------------


def course_relative(value: Any, root: Any = None) -> Any:
    """``value`` (a string, or lists and dicts of them) with the grading machine's absolute paths made relative:
    the course folder's (``root``) to paths inside it (``submitted/alice/autograd/01_autograd_basics.ipynb``),
    the Python packages' to ``site-packages/...`` (a torch frame of a traceback), the course repository's (the
    grader, its ``.venv``) to paths inside it, the home folder's to ``~/``. What students read (verdicts,
    diagnoses, their cells' tracebacks, in the autograded notebook, the feedback page and grader_results/)
    goes through here, so it never shows where the instructor keeps the course."""
    pairs = _path_prefixes(str(root) if root else "")
    if isinstance(value, str):
        if "/" not in value:
            return value
        for prefix, shown in pairs:
            if prefix in value:
                value = value.replace(prefix, shown)
        return value
    if isinstance(value, list):
        return [course_relative(v, root) for v in value]
    if isinstance(value, tuple):
        return tuple(course_relative(v, root) for v in value)
    if isinstance(value, dict):  # (in place: an nbformat NotebookNode stays one)
        for key in list(value):
            value[key] = course_relative(value[key], root)
    return value


_PREFIXES: dict[str, list[tuple[str, str]]] = {}


def _path_prefixes(root: str) -> list[tuple[str, str]]:
    """(absolute folder + '/', what replaces it), longest first: a folder inside another is matched first."""
    found = _PREFIXES.get(root)
    if found is not None:
        return found
    import os
    import site
    import sys
    import sysconfig
    from pathlib import Path

    pairs: dict[str, str] = {}

    def add(path: Any, shown: str) -> None:
        for form in {str(path), os.path.realpath(str(path))}:
            form = form.rstrip("/")
            if form.startswith("/") and form != "/":
                pairs.setdefault(form + "/", shown)

    if root:
        add(root, "")
    paths = sysconfig.get_paths()
    for packages in {paths.get("purelib", ""), paths.get("platlib", ""), *getattr(site, "getsitepackages", list)()}:
        if packages:
            add(packages, "site-packages/")
    add(Path(__file__).resolve().parents[2], "")  # the course repository: grader/, its .venv
    add(sys.prefix, "venv/")
    try:
        add(Path.home(), "~/")
    except RuntimeError:
        pass
    found = _PREFIXES[root] = sorted(pairs.items(), key=lambda pair: -len(pair[0]))
    return found
