"""``kconform run``: every selected fixture on every implementation, the report and the
results file. Exit 1 when a result is unexpected or an implementation establishes no level."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..implementations.bundled import DEFAULT_SUITE
from ..judging.levels import LEVELS
from .common import (
    DEFAULT_RESULTS,
    FORMATS,
    add_report_options,
    add_selection,
    add_timeouts,
    command_parser,
    emit,
    fail,
    select,
    terminal_options,
)

if TYPE_CHECKING:
    from ..fixtures.loading import Fixture
    from ..judging.expectations import Expectations
    from ..judging.runner import FixtureResult


def register(sub: Any) -> None:
    run = command_parser(
        sub,
        "run",
        "run the fixtures against implementations and print the report",
        "Replay every selected fixture on every implementation, compare each step's observation with the "
        "fixture's expectation, print the report and write the results file.",
    )
    run.add_argument(
        "--impl",
        action="append",
        metavar="SPEC",
        help="a registered name (kconform impls), module:factory (a Python module in the current folder or "
        "installed) or exec:COMMAND (a stdio program); repeatable (default: " + ", ".join(DEFAULT_SUITE) + ")",
    )
    add_selection(run)
    run.add_argument(
        "--level",
        choices=LEVELS,
        default="exact",
        help="exact: step by step as the reference; settled: outcomes at quiescent points, timing may differ; "
        "safety: the spec's invariants on the implementation's own observations (docs/levels.md; default exact)",
    )
    run.add_argument(
        "--expectations",
        action="append",
        type=Path,
        metavar="FILE",
        help="YAML file of known failures, reported as XFAIL (repeatable; see docs/reports.md)",
    )
    run.add_argument(
        "--check-progress",
        action="store_true",
        help="end each fixture with a fair suffix and check the PROGRESS-* properties (spec: Progress; fuzz and "
        "explore always do)",
    )
    run.add_argument("--format", choices=FORMATS, default="terminal", help="what to print (default: terminal)")
    add_report_options(run)
    run.add_argument(
        "--results",
        type=Path,
        default=DEFAULT_RESULTS,
        help=f"where to write the results file (default: {DEFAULT_RESULTS})",
    )
    add_timeouts(run)
    run.add_argument("--no-progress", action="store_true", help="no progress line on the terminal")
    run.set_defaults(func=cmd_run)


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


def cmd_run(args: argparse.Namespace) -> int:
    from .. import reports
    from ..implementations.registry import UnknownImplementation, resolve
    from ..judging.expectations import load_expectations
    from ..reports.results import Implementation, ImplementationCannotStart, run_suite, unexpected_count, write_document

    fixtures = select(args)
    specs = args.impl or list(DEFAULT_SUITE)
    expectations, problems = load_expectations(args.expectations or [])
    if problems:
        fail("invalid expectations:\n" + "\n".join(str(p) for p in problems))
    implementations = []
    for spec in specs:
        try:
            implementations.append(
                Implementation(spec, resolve(spec, timeout_s=args.timeout, start_timeout_s=args.start_timeout))
            )
        except UnknownImplementation as exc:
            fail(str(exc))
    progress = Progress(len(fixtures) * len(implementations), sys.stderr, not args.no_progress)
    selection = {"tags": args.tag, "generations": args.generation, "ids": args.id, "implementations": specs}
    try:
        selection["level"] = args.level
        document = run_suite(
            implementations, fixtures, expectations, progress, selection, args.level, args.check_progress
        )
    except ImplementationCannotStart as exc:
        detail = "\n".join("  " + line for line in exc.detail.splitlines())
        fail(f"{exc}" + (f"\n{detail}" if detail else "") + "\nnothing was run (see docs/adapters.md, 'Handshake')")
    finally:
        progress.close()
    write_document(document, args.results)
    _warn_unused_expectations(expectations, document)
    emit(reports.render(document, args.format, **terminal_options(args)))
    print(f"\nresults: {args.results}", file=sys.stderr)
    unestablished = _not_established(document)
    for line in unestablished:
        print(f"kconform: {line}", file=sys.stderr)
    return 1 if unexpected_count(document) or unestablished else 0


def _not_established(document: dict[str, Any]) -> list[str]:
    """Per implementation whose results establish no level (errored, or safety not
    certified), why: such a run does not pass, whatever its fixtures' outcomes."""
    from ..judging.levels import level_met

    out = []
    for impl in document["implementations"]:
        own = [r for r in document["results"] if r["implementation"] == impl["id"]]
        met = level_met(own)
        if "not established" in met and not met.startswith("not established:"):  # errored ones are unexpected already
            out.append(f"{impl['id']}: no level met: {met}")
    return out


def _warn_unused_expectations(expectations: Expectations, document: dict[str, Any]) -> None:
    names = {i["id"]: i.get("name", i["id"]) for i in document["implementations"]}
    seen = {
        (impl, r["fixture"])
        for r in document["results"]
        for impl in (r["implementation"], names.get(r["implementation"]))
    }
    for entry in expectations.unused({(i, f) for i, f in seen if i}):
        print(f"warning: expected failure for a fixture not run: {entry}", file=sys.stderr)
