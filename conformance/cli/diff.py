"""``kconform diff``: regressions and fixes between two results files (exit 1 on a
regression); runs of one implementation each are paired fixture by fixture."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .common import command_parser, emit, fail, table


def register(sub: Any) -> None:
    dif = command_parser(
        sub,
        "diff",
        "regressions and fixes between two results files",
        "Compare two results files: regressions (passed before, not now) make the exit code 1.",
    )
    dif.add_argument("old", type=Path, help="the earlier results file")
    dif.add_argument("new", type=Path, help="the later results file")
    dif.add_argument("--format", choices=["terminal", "json"], default="terminal", help="(default: terminal)")
    dif.set_defaults(func=cmd_diff)


def cmd_diff(args: argparse.Namespace) -> int:
    from ..reports.results import ResultsError, diff_documents, load_document

    try:
        old, new = load_document(args.old), load_document(args.new)
    except ResultsError as exc:
        fail(str(exc))
    old, new, note = _pair_implementations(old, new)
    changes = diff_documents(old, new)
    if args.format == "json":
        emit(json.dumps({**changes, **({"note": note} if note else {})}, indent=1) + "\n")
        return 1 if changes["regressions"] else 0
    if note:
        emit(f"note: {note}\n\n")
    for kind in ("regressions", "fixes", "changed", "added", "removed"):
        rows = changes[kind]
        if not rows:
            continue
        headers = list(rows[0])
        emit(f"{kind} ({len(rows)})\n" + table([[r[h] for h in headers] for r in rows], headers) + "\n\n")
    if not any(changes.values()):
        emit("no differences\n")
    return 1 if changes["regressions"] else 0


def _pair_implementations(old: dict[str, Any], new: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Two runs of different implementations: one each is compared fixture by fixture (as
    ``OLD -> NEW``), with a note saying so; runs with no implementation in common and
    several each cannot be paired (a usage error), rather than listing every result as
    added and removed."""
    before = list(dict.fromkeys(r["implementation"] for r in old["results"]))
    after = list(dict.fromkeys(r["implementation"] for r in new["results"]))
    if not before or not after or set(before) & set(after):
        return old, new, ""
    if len(before) == 1 and len(after) == 1:
        label = f"{before[0]} -> {after[0]}"

        def relabel(doc: dict[str, Any]) -> dict[str, Any]:
            return {**doc, "results": [{**r, "implementation": label} for r in doc["results"]]}

        note = (
            f"the two runs judge different implementations ({before[0]} in the old, {after[0]} in the new): "
            "their results are compared fixture by fixture"
        )
        return relabel(old), relabel(new), note
    fail(
        f"the two runs have no implementation in common (old: {', '.join(before)}; new: {', '.join(after)}): "
        "nothing to compare; compare runs of the same implementations, or one implementation each"
    )
