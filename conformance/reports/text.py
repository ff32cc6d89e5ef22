"""Terminal and Markdown reports: the views as tabulate tables."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from . import views


def _render(table: views.Table, fmt: str, heading: str) -> str:
    parts = [heading + table.title, ""]
    parts.append(tabulate(table.rows, headers=table.headers, tablefmt=fmt, disable_numparse=True))
    if table.note:
        parts += ["", table.note]
    return "\n".join(parts)


def render(
    doc: dict[str, Any], fmt: str, heading: str, *, rules: bool, matrix: bool, max_failures: int | None = None
) -> str:
    tables = [views.summary(doc)]
    if matrix:
        tables.append(views.matrix(doc))
    if rules:
        tables.append(views.rules(doc))
    out = [_render(t, fmt, heading) for t in tables]
    failures = views.failures(doc)
    if failures:
        out.append(heading + "Failures")
        shown = failures if max_failures is None else failures[:max_failures]
        out += [_render(t, fmt, heading + "#" if heading else "") for t in shown]
        if len(shown) < len(failures):
            out.append(
                f"... and {len(failures) - len(shown)} more: `kconform report RESULTS --format markdown` "
                "(or --all-failures) shows them all"
            )
    return "\n\n".join(out) + "\n"


TERMINAL_FAILURES = 10


def terminal(doc: dict[str, Any], *, rules: bool = False, matrix: bool = False, all_failures: bool = False) -> str:
    """The report for a terminal: summary, then the first failures (matrix and rules on
    request)."""
    limit = None if all_failures else TERMINAL_FAILURES
    return render(doc, "rounded_outline", "", rules=rules, matrix=matrix, max_failures=limit)


def markdown(doc: dict[str, Any]) -> str:
    """The full report as GitHub-flavoured Markdown (pastes into a pull request)."""
    run = doc["run"]
    head = f"# kconform results\n\nSuite {doc['kconform']['suite_version']}, run {run['started']}.\n\n"
    return head + render(doc, "github", "## ", rules=True, matrix=True)
