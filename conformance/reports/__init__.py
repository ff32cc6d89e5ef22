"""Report formats, all rendered from one results document (``conformance/results.py``)."""

from __future__ import annotations

import json
from typing import Any

from . import html, junit, text

FORMATS = ("terminal", "markdown", "html", "json", "junit")
EXTENSIONS = {"terminal": "txt", "markdown": "md", "html": "html", "json": "json", "junit": "xml"}


def render(doc: dict[str, Any], fmt: str, **options: Any) -> str:
    if fmt == "terminal":
        return text.terminal(doc, **options)
    if fmt == "markdown":
        return text.markdown(doc)
    if fmt == "html":
        return html.render(doc)
    if fmt == "json":
        return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    if fmt == "junit":
        return junit.render(doc)
    raise ValueError(f"unknown format {fmt!r} (one of: {', '.join(FORMATS)})")
