"""Report formats, all rendered from one results document (``conformance/reports/results.py``).

Each format's module is imported when that format is first rendered: the terminal
report (what ``kconform run`` prints) needs neither the HTML page nor its diagrams.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

FORMATS = ("terminal", "markdown", "html", "json", "junit")


def render(doc: dict[str, Any], fmt: str, **options: Any) -> str:
    if fmt == "terminal":
        from . import text

        return text.terminal(doc, **options)
    if fmt == "markdown":
        from . import text

        return text.markdown(doc)
    if fmt == "html":
        from . import html

        return html.render(doc)
    if fmt == "json":
        return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    if fmt == "junit":
        from . import junit

        return junit.render(doc)
    raise ValueError(f"unknown format {fmt!r} (one of: {', '.join(FORMATS)})")


def __getattr__(name: str) -> Any:
    """``reports.html``, ``reports.junit``, ``reports.text``: imported on first use."""
    if name in ("html", "junit", "text", "views"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
