"""``kconform list``, ``validate``, ``explain`` and ``impls``: the commands that read
fixtures or the registry and judge nothing."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..fixtures.paths import FIXTURES_DIR
from .common import add_selection, command_parser, emit, fail, load_fixtures_under, plural, select, table


def register(sub: Any) -> None:
    lst = command_parser(
        sub, "list", "list fixtures", "List the selected fixtures: id, title, tags and the source they cite."
    )
    add_selection(lst)
    lst.set_defaults(func=cmd_list)

    val = command_parser(
        sub,
        "validate",
        "check fixture files against the schema",
        "Check fixture files against spec/fixture.schema.json and the model (steps, replica names, config). "
        "Every problem is printed as FILE:LINE: FIELD: MESSAGE.",
    )
    val.add_argument("paths", nargs="*", type=Path, help="files or folders (default: the bundled fixtures)")
    val.set_defaults(func=cmd_validate)

    exp = command_parser(
        sub,
        "explain",
        "show a fixture as a step table with the rules that fire",
        "Print a fixture as the seeds write their tables: each step, the fields that change (old -> new), "
        "the spec rules the reference fires, and the fixture's explanation.",
    )
    exp.add_argument("fixture", help="a fixture id (all its generations) or the path of a fixture file")
    exp.add_argument(
        "--fixtures", action="append", type=Path, metavar="PATH", help="where to look for the id (default: bundled)"
    )
    exp.add_argument("--format", choices=["terminal", "markdown"], default="terminal", help="(default: terminal)")
    exp.add_argument(
        "--svg", type=Path, metavar="OUT", help="write the steps as an SVG diagram strip (one file per generation)"
    )
    exp.add_argument("--html", type=Path, metavar="OUT", help="write a page with the step table and a diagram per step")
    exp.set_defaults(func=cmd_explain)

    imp = command_parser(
        sub, "impls", "list registered implementations", "List the implementations usable by name with --impl."
    )
    imp.set_defaults(func=cmd_impls)


def cmd_list(args: argparse.Namespace) -> int:
    fixtures = select(args)
    rows = [[f.id, f.title, ", ".join(f.tags), f.source] for f in fixtures]
    emit(table(rows, ["id", "title", "tags", "source"], maxcolwidths=[None, 50, 30, 40]) + "\n")
    emit(f"\n{plural(len(fixtures), 'fixture')}\n")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from ..fixtures.loading import fixture_files, load_fixtures

    paths = args.paths or [FIXTURES_DIR]
    fixtures, problems = load_fixtures(paths)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(plural(len(problems), "problem"), file=sys.stderr)
        return 2
    if not fixtures:
        where = ", ".join(str(p) for p in paths)
        kind = "fixtures" if fixture_files(paths) else "fixture files (*.yaml, *.yml)"
        fail(f"no {kind} under {where}: nothing to validate")
    emit(f"{plural(len(fixtures), 'fixture')} valid\n")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from ..reports.explain import explain

    target = Path(args.fixture)
    if target.suffix in (".yaml", ".yml"):
        if not target.exists():
            fail(f"{target}: no such file")
        matches = load_fixtures_under([target])
    else:
        matches = [f for f in load_fixtures_under(args.fixtures) if f.id == args.fixture or f.base_id == args.fixture]
    if not matches:
        fail(f"no fixture {args.fixture!r} (see `kconform list`)")
    if args.svg or args.html:
        from ..reports.diagrams.story import write_pictures

        for written in write_pictures(matches, svg=args.svg, html=args.html):
            print(f"wrote {written}", file=sys.stderr)
        return 0
    fmt = "github" if args.format == "markdown" else "rounded_outline"
    emit("\n".join(explain(f, fmt) for f in matches))
    return 0


def cmd_impls(args: argparse.Namespace) -> int:
    from ..implementations.registry import registered

    rows = [[entry.name, entry.target, entry.summary] for entry in registered()]
    emit(table(rows, ["name", "factory", "what"]) + "\n")
    emit(
        "\nalso: module:factory for an in-process Python implementation, exec:COMMAND for a stdio one,"
        " zoo:NAME for a faulty one (kconform sensitivity --list)\n"
    )
    return 0
