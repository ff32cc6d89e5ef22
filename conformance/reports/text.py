"""Terminal and Markdown reports: the views as tabulate tables."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from . import fit, views
from .cells import Table

COLORS = {"PASS": "32", "pass": "32", "FAIL": "1;31", "ERROR": "1;35", "XPASS": "1;31", "skip": "33", "xfail": "36"}
"""ANSI SGR codes for statuses on a terminal (green, red, magenta, yellow, cyan)."""


def _paint(cell: str) -> str:
    """Colour a status cell, or the status word that ends a failure's title."""
    for word, code in COLORS.items():
        if cell == word or cell.endswith(": " + word):
            head = cell[: len(cell) - len(word)]
            return f"{head}\x1b[{code}m{word}\x1b[0m"
    return cell


def _render(table: Table, fmt: str, heading: str, color: bool = False, width: int | None = None) -> str:
    title = _paint(table.title) if color else table.title
    rows = [["" if c is None else str(c) for c in row] for row in table.rows]
    headers = list(table.headers)
    if fmt != "github":  # a terminal table is wrapped at spaces to the width (Markdown never is)
        sizes = fit.widths(rows, headers, fmt, width=width)
        rows = [[fit.wrap(c, sizes[i]) for i, c in enumerate(row)] for row in rows]
        headers = [fit.wrap(h, sizes[i]) for i, h in enumerate(headers)]
    if color:
        rows = [[_paint(c) for c in row] for row in rows]
    if fmt != "github" and not any(h.strip() for h in headers):
        headers = []  # no empty header row on a terminal (Markdown needs one)
    parts = [heading + title, ""]
    parts.append(tabulate(rows, headers=headers, tablefmt=fmt, disable_numparse=True))
    if table.note:
        parts += ["", table.note]
    return "\n".join(parts)


def render(
    doc: dict[str, Any],
    fmt: str,
    heading: str,
    *,
    rules: bool,
    matrix: bool,
    max_failures: int | None = None,
    color: bool = False,
    width: int | None = None,
) -> str:
    """The tables in order; ``heading`` is the Markdown prefix of a section title ("## "),
    sub-sections get one more level ("### "); terminal tables fit ``width`` if given."""
    tables = [views.summary(doc)]
    if matrix:
        tables.append(views.matrix(doc))
    if rules:
        tables += [views.rules(doc), views.culprits(doc)]
    coverage = views.safety_coverage(doc)
    if coverage.rows and (rules or any("not" in c for row in coverage.rows for c in row[1:])):
        tables.append(coverage)
    counts = views.failure_counts(doc)
    if counts.rows:
        tables.append(counts)
    grouped = views.signatures(doc)
    if grouped.rows:
        tables.append(grouped)
    out = [_render(t, fmt, heading, color, width) for t in tables]
    failures = views.failures(doc)
    if failures:
        out.append(heading + "Failures")
        shown = failures if max_failures is None else failures[:max_failures]
        sub = "#" + heading if heading else ""
        out += [_render(t, fmt, sub, color, width) for t in shown]
        if len(shown) < len(failures):
            out.append(
                f"... and {len(failures) - len(shown)} more: `kconform report RESULTS --format markdown` "
                "(or --all-failures) shows them all"
            )
    return "\n\n".join(out) + "\n"


TERMINAL_FAILURES = 10


def terminal(
    doc: dict[str, Any], *, rules: bool = False, matrix: bool = False, all_failures: bool = False, color: bool = False
) -> str:
    """The report for a terminal: summary, then the first failures (matrix and rules on
    request); statuses in colour when ``color``."""
    limit = None if all_failures else TERMINAL_FAILURES
    width = fit.terminal_width()
    return render(doc, "rounded_outline", "", rules=rules, matrix=matrix, max_failures=limit, color=color, width=width)


def markdown(doc: dict[str, Any]) -> str:
    """The full report as GitHub-flavoured Markdown (pastes into a pull request)."""
    run = doc["run"]
    head = f"# kconform results\n\nSuite {doc['kconform']['suite_version']}, run {run['started']}.\n\n"
    return head + render(doc, "github", "## ", rules=True, matrix=True)
