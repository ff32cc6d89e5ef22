"""A self-contained HTML report: one file, inline CSS and SVG, no scripts or external assets.

A failed fixture shows the expected (reference) and observed (implementation) state at
its first divergent step as diagrams side by side (docs/diagrams.md)."""

from __future__ import annotations

import html
from typing import Any

from tabulate import tabulate

from . import views
from .cells import Table
from .diagrams.report import CSS as DIAGRAM_CSS
from .diagrams.report import divergence_figure

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 75em; color: #1d1d1f; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.05em; margin-top: 1.5em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: #f5f5f7; } td pre { margin: 0; white-space: pre-wrap; }
.pass { background: #e3f6e5; } .fail, .xpass { background: #fde2e1; } .error { background: #ffe9c7; }
.skip, .xfail { background: #eeeeef; color: #555; } .note { color: #555; }
"""

CLASS = {"pass": "pass", "FAIL": "fail", "ERROR": "error", "skip": "skip", "xfail": "xfail", "XPASS": "xpass"}


def _cell(text: str) -> str:
    escaped = html.escape(text)
    css = CLASS.get(text)
    if css:
        return f'<span class="{css}">{escaped}</span>'
    if "\n" in text:
        return f"<pre>{escaped}</pre>"
    return escaped


def _table(table: Table, level: int) -> str:
    rows = [[_cell(c) for c in row] for row in table.rows]
    headers = [html.escape(h) for h in table.headers]
    body = tabulate(rows, headers=headers, tablefmt="unsafehtml", disable_numparse=True)
    note = f'<p class="note">{html.escape(table.note)}</p>' if table.note else ""
    return f"<h{level}>{html.escape(table.title)}</h{level}>\n{body}\n{note}"


def render(doc: dict[str, Any]) -> str:
    run = doc["run"]
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>kconform results</title>",
        f"<style>{CSS}{DIAGRAM_CSS}</style></head><body>",
        "<h1>kconform results</h1>",
        f'<p class="note">Suite {html.escape(doc["kconform"]["suite_version"])}, run {html.escape(run["started"])}, '
        f"{run['duration_s']} s.</p>",
        _table(views.summary(doc), 2),
        _table(views.matrix(doc), 2),
        _table(views.rules(doc), 2),
        _table(views.culprits(doc), 2),
        _table(views.safety_coverage(doc), 2),
        _table(views.signatures(doc), 2),
    ]
    failures = views.failures(doc, include_expected=True)
    if failures:
        parts.append("<h2>Failures</h2>")
        # views.failures keeps every failed or errored record, in order: pair each table with its record
        records = [r for r in doc["results"] if r["outcome"] in ("failed", "errored")]
        for table, record in zip(failures, records, strict=True):
            parts += [_table(table, 3), divergence_figure(record)]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
