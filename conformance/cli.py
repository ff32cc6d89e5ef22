"""The ``kconform`` command.

Exit codes: 0 every result as expected; 1 some result unexpected (FAIL, ERROR, XPASS);
2 bad input or usage (a malformed fixture, an unknown implementation, an unreadable
results file), always with a message that says what to fix.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from tabulate import tabulate

import reference_impl

from . import reports
from .adapter import AdapterError
from .bundled import DEFAULT_SUITE
from .expectations import Expectations, load_expectations
from .explain import explain
from .fixtures import Fixture, load_fixtures
from .paths import FIXTURES_DIR
from .registry import UnknownImplementation, registered, resolve
from .results import (
    Implementation,
    ResultsError,
    diff_documents,
    load_document,
    run_suite,
    unexpected_count,
    write_document,
)
from .runner import FixtureResult
from .stdio import DEFAULT_TIMEOUT_S

DEFAULT_RESULTS = Path("out/kconform-results.json")


class UsageError(Exception):
    """Bad input: reported on stderr, exit code 2."""


def _fail(message: str) -> NoReturn:
    raise UsageError(message)


# --- selection ---------------------------------------------------------------------


def _add_selection(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--fixtures",
        action="append",
        type=Path,
        metavar="PATH",
        help="fixture file or folder (repeatable; default: the bundled fixtures/)",
    )
    p.add_argument("--tag", action="append", default=[], help="only fixtures with this tag (repeatable: any of them)")
    p.add_argument(
        "--generation",
        action="append",
        default=[],
        choices=[g.value for g in reference_impl.Generation],
        help="only fixtures run under this generation (repeatable)",
    )
    p.add_argument("--id", action="append", default=[], metavar="GLOB", help="only fixture ids matching (repeatable)")


def _select(args: argparse.Namespace) -> list[Fixture]:
    fixtures, problems = load_fixtures(args.fixtures or [FIXTURES_DIR])
    if problems:
        _fail("invalid fixtures:\n" + "\n".join(str(p) for p in problems))
    out = []
    for f in fixtures:
        if args.tag and not set(args.tag) & set(f.tags):
            continue
        if args.generation and f.generation.value not in args.generation:
            continue
        if args.id and not any(fnmatch.fnmatchcase(f.id, g) or fnmatch.fnmatchcase(f.base_id, g) for g in args.id):
            continue
        out.append(f)
    if not out:
        _fail("no fixture matches the selection (see `kconform list`)")
    return out


# --- progress ------------------------------------------------------------------------


class Progress:
    """One self-rewriting status line on a terminal; silent otherwise."""

    def __init__(self, total: int, stream: TextIO, enabled: bool) -> None:
        self.total, self.stream, self.done = total, stream, 0
        self.enabled = enabled and stream.isatty()

    def __call__(self, impl: str, fixture: Fixture, result: FixtureResult) -> None:
        self.done += 1
        if not self.enabled:
            return
        width = shutil.get_terminal_size((100, 20)).columns
        line = f"[{self.done}/{self.total}] {impl}  {fixture.id}  {result.status}"
        self.stream.write("\r" + line[: width - 1].ljust(width - 1))
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * (shutil.get_terminal_size((100, 20)).columns - 1) + "\r")
            self.stream.flush()


# --- commands -----------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    fixtures = _select(args)
    specs = args.impl or list(DEFAULT_SUITE)
    expectations, problems = load_expectations(args.expectations or [])
    if problems:
        _fail("invalid expectations:\n" + "\n".join(str(p) for p in problems))
    implementations = []
    for spec in specs:
        try:
            implementations.append(Implementation(spec, resolve(spec, timeout_s=args.timeout)))
        except UnknownImplementation as exc:
            _fail(str(exc))
    progress = Progress(len(fixtures) * len(implementations), sys.stderr, not args.no_progress)
    selection = {"tags": args.tag, "generations": args.generation, "ids": args.id, "implementations": specs}
    try:
        document = run_suite(implementations, fixtures, expectations, progress, selection)
    finally:
        progress.close()
    write_document(document, args.results)
    _warn_unused_expectations(expectations, document)
    sys.stdout.write(reports.render(document, args.format, **_terminal_options(args)))
    print(f"\nresults: {args.results}", file=sys.stderr)
    return 1 if unexpected_count(document) else 0


def _terminal_options(args: argparse.Namespace) -> dict[str, Any]:
    if args.format != "terminal":
        return {}
    return {"rules": args.rules, "matrix": args.matrix, "all_failures": args.all_failures}


def _warn_unused_expectations(expectations: Expectations, document: dict[str, Any]) -> None:
    names = {i["id"]: i.get("name", i["id"]) for i in document["implementations"]}
    seen = {
        (impl, r["fixture"])
        for r in document["results"]
        for impl in (r["implementation"], names.get(r["implementation"]))
    }
    for entry in expectations.unused({(i, f) for i, f in seen if i}):
        print(f"warning: expected failure for a fixture not run: {entry}", file=sys.stderr)


def cmd_list(args: argparse.Namespace) -> int:
    fixtures = _select(args)
    rows = [[f.id, f.title, ", ".join(f.tags), f.source] for f in fixtures]
    print(tabulate(rows, headers=["id", "title", "tags", "source"], tablefmt="simple", maxcolwidths=[None, 50, 30, 40]))
    print(f"\n{len(fixtures)} fixtures")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    paths = args.paths or [FIXTURES_DIR]
    fixtures, problems = load_fixtures(paths)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem(s)", file=sys.stderr)
        return 2
    print(f"{len(fixtures)} fixtures valid")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    fixtures, problems = load_fixtures(args.fixtures or [FIXTURES_DIR])
    if problems:
        _fail("invalid fixtures:\n" + "\n".join(str(p) for p in problems))
    matches = [f for f in fixtures if f.id == args.fixture or f.base_id == args.fixture]
    if not matches:
        _fail(f"no fixture {args.fixture!r} (see `kconform list`)")
    fmt = "github" if args.format == "markdown" else "rounded_outline"
    print("\n".join(explain(f, fmt) for f in matches), end="")
    return 0


def cmd_impls(args: argparse.Namespace) -> int:
    rows = []
    for entry in registered():
        rows.append([entry.name, entry.target, entry.summary])
    print(tabulate(rows, headers=["name", "factory", "what"], tablefmt="simple"))
    print("\nalso: module:factory for an in-process Python implementation, exec:COMMAND for a stdio one")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    try:
        document = load_document(args.results)
    except ResultsError as exc:
        _fail(str(exc))
    text = reports.render(document, args.format, **_terminal_options(args))
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    try:
        old, new = load_document(args.old), load_document(args.new)
    except ResultsError as exc:
        _fail(str(exc))
    changes = diff_documents(old, new)
    if args.format == "json":
        print(json.dumps(changes, indent=1))
        return 1 if changes["regressions"] else 0
    for kind in ("regressions", "fixes", "changed", "added", "removed"):
        rows = changes[kind]
        if not rows:
            continue
        print(f"{kind} ({len(rows)})")
        headers = list(rows[0])
        print(tabulate([[r[h] for h in headers] for r in rows], headers=headers, tablefmt="simple") + "\n")
    if not any(changes.values()):
        print("no differences")
    return 1 if changes["regressions"] else 0


def cmd_fuzz(args: argparse.Namespace) -> int:
    from .stateful import fuzz, witness_fixture  # hypothesis is only needed here

    try:
        adapter = resolve(args.impl, timeout_s=args.timeout)
    except UnknownImplementation as exc:
        _fail(str(exc))
    generation = reference_impl.Generation(args.generation)
    try:
        trace = fuzz(adapter, generation, args.examples, args.steps, derandomize=args.derandomize)
    except AdapterError as exc:
        _fail(f"{args.impl} cannot describe itself: {exc.message}\n{exc.detail}")
    if trace is None:
        print(f"{args.impl} agreed with the reference on {args.examples} random runs ({args.generation})")
        return 0
    args.witness.parent.mkdir(parents=True, exist_ok=True)
    args.witness.write_text(witness_fixture(trace), encoding="utf-8")
    print(f"{args.impl} disagrees with the reference after {len(trace.steps)} steps (shrunk).")
    print(f"witness fixture: {args.witness}  (replay: kconform run --impl '{args.impl}' --fixtures {args.witness})")
    return 1


# --- parser ---------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kconform",
        description="Check implementations of Kafka partition replication against an executable spec.",
    )
    parser.add_argument("--version", action="version", version=f"kconform {reference_impl.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run the fixtures against implementations and print the report")
    run.add_argument(
        "--impl",
        action="append",
        metavar="SPEC",
        help="registered name, module:factory or exec:COMMAND (repeatable; default: " + ", ".join(DEFAULT_SUITE) + ")",
    )
    _add_selection(run)
    run.add_argument("--expectations", action="append", type=Path, metavar="FILE", help="expected failures (YAML)")
    run.add_argument("--format", choices=reports.FORMATS, default="terminal", help="what to print (default: terminal)")
    run.add_argument("--rules", action="store_true", help="terminal: add the rule view")
    run.add_argument("--matrix", action="store_true", help="terminal: add the fixture x implementation matrix")
    run.add_argument("--all-failures", action="store_true", help="terminal: every failure, not the first 10")
    run.add_argument("--results", type=Path, default=DEFAULT_RESULTS, help=f"results file (default: {DEFAULT_RESULTS})")
    run.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="stdio reply timeout, seconds")
    run.add_argument("--no-progress", action="store_true", help="no progress line on the terminal")
    run.set_defaults(func=cmd_run)

    lst = sub.add_parser("list", help="list fixtures")
    _add_selection(lst)
    lst.set_defaults(func=cmd_list)

    val = sub.add_parser("validate", help="check fixture files against the schema")
    val.add_argument("paths", nargs="*", type=Path, help="files or folders (default: the bundled fixtures/)")
    val.set_defaults(func=cmd_validate)

    exp = sub.add_parser("explain", help="show a fixture as a step table with the rules that fire")
    exp.add_argument("fixture", help="fixture id (all its generations if the file has several)")
    exp.add_argument("--fixtures", action="append", type=Path, metavar="PATH")
    exp.add_argument("--format", choices=["terminal", "markdown"], default="terminal")
    exp.set_defaults(func=cmd_explain)

    imp = sub.add_parser("impls", help="list registered implementations")
    imp.set_defaults(func=cmd_impls)

    rep = sub.add_parser("report", help="render a saved results file")
    rep.add_argument("results", type=Path)
    rep.add_argument("--format", choices=reports.FORMATS, default="terminal")
    rep.add_argument("--rules", action="store_true", help="terminal: add the rule view")
    rep.add_argument("--matrix", action="store_true", help="terminal: add the fixture x implementation matrix")
    rep.add_argument("--all-failures", action="store_true", help="terminal: every failure, not the first 10")
    rep.add_argument("-o", "--output", type=Path, help="write to a file instead of stdout")
    rep.set_defaults(func=cmd_report)

    fz = sub.add_parser("fuzz", help="random runs against the reference, step by step; shrink a disagreement")
    fz.add_argument("--impl", required=True, metavar="SPEC")
    fz.add_argument("--generation", default="leader-epoch", choices=[g.value for g in reference_impl.Generation])
    fz.add_argument("--examples", type=int, default=100, help="random runs (default 100)")
    fz.add_argument("--steps", type=int, default=30, help="steps per run (default 30)")
    fz.add_argument("--witness", type=Path, default=Path("out/fuzz-witness.yaml"))
    fz.add_argument("--derandomize", action="store_true", help="the same runs every time (for CI)")
    fz.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="stdio reply timeout, seconds")
    fz.set_defaults(func=cmd_fuzz)

    dif = sub.add_parser("diff", help="regressions and fixes between two results files")
    dif.add_argument("old", type=Path)
    dif.add_argument("new", type=Path)
    dif.add_argument("--format", choices=["terminal", "json"], default="terminal")
    dif.set_defaults(func=cmd_diff)

    from .corpus.cli import add_commands  # generate, replay (corpora at scale)

    add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except UsageError as exc:
        print(f"kconform: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kconform: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
