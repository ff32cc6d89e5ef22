"""``kconform report``: a saved results file rendered again, in any format."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .common import FORMATS, add_report_options, command_parser, emit, fail, terminal_options


def register(sub: Any) -> None:
    rep = command_parser(
        sub, "report", "render a saved results file", "Render a results file written by `kconform run` again."
    )
    rep.add_argument("results", type=Path, help="a results file (e.g. out/kconform-results.json)")
    rep.add_argument("--format", choices=FORMATS, default="terminal", help="(default: terminal)")
    add_report_options(rep)
    rep.add_argument("-o", "--output", type=Path, metavar="FILE", help="write to FILE instead of stdout")
    rep.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from .. import reports
    from ..reports.results import ResultsError, load_document

    try:
        document = load_document(args.results)
    except ResultsError as exc:
        fail(str(exc))
    text = reports.render(document, args.format, **terminal_options(args))
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        emit(text)
    return 0
