"""The ``kconform`` command.

Exit codes: 0 every result as expected; 1 some result unexpected (FAIL, ERROR, XPASS);
2 bad input or usage (a malformed fixture, an unknown implementation, an implementation
that cannot start, an unreadable results file), always with one message that says what
to fix. Output piped into ``head`` stops quietly. Heavy modules (tabulate, jsonschema,
hypothesis) are imported by the commands that need them, so ``--help`` is instant.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from reference_impl.config import Generation

from ..adapters.base import AdapterError
from ..corpus.progress import Progress as RateProgress
from ..fixtures.paths import FIXTURES_DIR
from ..implementations.bundled import DEFAULT_SUITE
from ..judging.levels import LEVELS
from .common import (
    DEFAULT_RESULTS,
    FORMATS,
    GENERATIONS,
    Formatter,
    UsageError,
    add_report_options,
    add_selection,
    add_timeouts,
    emit,
    fail,
    load_fixtures_under,
    plural,
    select,
    table,
    terminal_options,
)

if TYPE_CHECKING:
    from ..fixtures.loading import Fixture
    from ..judging.expectations import Expectations
    from ..judging.runner import FixtureResult


# --- selection ---------------------------------------------------------------------


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


def cmd_fuzz(args: argparse.Namespace) -> int:
    from ..implementations.registry import UnknownImplementation, resolve
    from ..search.distribution import WeightsError, parse_weights
    from ..search.explore import witness_fixture as invariant_witness
    from ..search.stateful import fuzz_all, witness_fixture

    try:
        weights = parse_weights(args.weights or "")
    except WeightsError as exc:
        fail(str(exc))
    try:
        adapter = resolve(args.impl, timeout_s=args.timeout, start_timeout_s=args.start_timeout)
    except UnknownImplementation as exc:
        fail(str(exc))
    ignore = _known_differences(args.expectations or [], args.impl, adapter)
    generation = Generation(args.generation)
    if args.examples is None:
        args.examples = 1000 if args.level == "safety" else 100
    progress = RateProgress(args.examples, "runs", sys.stderr, enabled=not args.no_progress and not args.json)
    try:
        adapter.describe()
    except AdapterError as exc:
        fail(f"implementation {args.impl!r} cannot start: {exc.message}\n{exc.detail}")
    try:
        report = fuzz_all(
            adapter,
            generation,
            args.examples,
            args.steps,
            args.derandomize,
            level=args.level,
            ignore=ignore,
            seed=args.seed,
            weights=weights,
            on_run=progress.update,
        )
    except AdapterError as exc:
        progress.close()
        fail(f"implementation {args.impl!r}: {exc.message}" + (f"\n{exc.detail}" if exc.detail else ""))
    progress.close()
    ex = report.exercised
    kinds = ", ".join(f"{k} {n}" for k, n in ex.steps.most_common())
    rules = ", ".join(f"{k} {n}" for k, n in sorted(ex.rules.items()))
    rate = ex.total_steps / ex.seconds if ex.seconds else 0.0
    summary = (
        f"exercised ({ex.runs} runs + {ex.shrink_runs} replays to shrink, {ex.total_steps} steps, "
        f"{ex.seconds:.1f} s, {rate:,.0f} steps/s; seed {report.seed}): steps: {kinds or 'none'}\n"
        + (f"rules fired: {rules or 'none'}\n" if args.level != "safety" else "")
    )
    if ex.skipped:
        summary += (
            "runs skipped (the implementation's limits): "
            + "; ".join(f"{n} x {reason}" for reason, n in ex.skipped.most_common())
            + "\n"
        )
    if args.level == "safety":
        refused = ", ".join(f"{k} {n}" for k, n in ex.refusals.most_common())
        summary += (
            f"steps drawn on the implementation's own path; refused by it: {refused or 'none'} "
            f"({sum(ex.refusals.values())} of {sum(ex.refusals.values()) + ex.total_steps})\n"
        )
    args.witness.parent.mkdir(parents=True, exist_ok=True)
    unexpected = 0
    found = ""
    for finding in report.findings:
        path = args.witness.with_name(f"{args.witness.stem}-{finding.invariant.lower()}{args.witness.suffix}")
        title = f"A run where the reference breaks {finding.invariant} ({finding.detail})"
        name = f"fuzz-{generation.value}-{finding.invariant.lower()}"
        path.write_text(invariant_witness(finding.config, finding.path, name, title), encoding="utf-8")
        note = "expected in this generation" if finding.expected else "UNEXPECTED: a spec bug"
        unexpected += not finding.expected
        found += (
            f"the reference breaks {finding.invariant} after {plural(len(finding.path), 'step')} ({note}; "
            f"shrunk witness after {finding.seconds:.1f} s): {finding.detail}\n   witness fixture: {path}\n"
        )
    established, why = ex.certificate()
    if report.interrupted:
        summary += f"INTERRUPTED (Ctrl-C) after {ex.runs} of {args.examples} runs: what they found is above\n"
    if args.json:
        paths = _fuzz_witnesses(args, report, generation)
        emit(json.dumps(_fuzz_json(args, report, established, why, paths), indent=1) + "\n")
        if report.interrupted:
            return 130
        unexpected = sum(not f.expected for f in report.findings)
        return 1 if report.failures or not established or unexpected else 0
    if not report.failures and not established:
        emit(
            f"{args.impl}: level {args.level} not established on {args.examples} random runs "
            f"({args.generation}): {why}\n" + found + summary
        )
        return 1
    if not report.failures:
        met = f"{args.impl} met level {args.level} on {args.examples} random runs ({args.generation})\n"
        if args.level == "exact":
            met += f"{args.impl} agreed with the reference on {args.examples} random runs\n"
        emit(met + found + summary)
        if report.interrupted:
            return 130
        return 1 if unexpected else 0
    emit(f"{args.impl} fails level {args.level}: {plural(len(report.failures), 'distinct failure')} (each shrunk)\n")
    for n, failure in enumerate(report.failures, 1):
        path = args.witness if n == 1 else args.witness.with_name(f"{args.witness.stem}-{n}{args.witness.suffix}")
        path.write_text(witness_fixture(failure.trace, f"fuzz-witness-{n}", failure.reason), encoding="utf-8")
        level = " --level safety" if failure.trace.level == "safety" or failure.signature.startswith("safety:") else ""
        level += " --check-progress" if failure.signature.startswith("safety:PROGRESS-") else ""
        emit(
            f"\n{n}. {failure.reason}\n   after {plural(len(failure.trace.steps), 'step')}; witness fixture: {path}\n"
            f"   replay: kconform run --impl '{args.impl}'{level} --fixtures {path}\n"
        )
    emit("\n" + found + summary)
    return 130 if report.interrupted else 1


def _fuzz_witnesses(args: argparse.Namespace, report: Any, generation: Generation) -> list[str]:
    """Write each failure's witness fixture (as the text output does); their paths."""
    from ..search.stateful import witness_fixture

    args.witness.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for n, failure in enumerate(report.failures, 1):
        path = args.witness if n == 1 else args.witness.with_name(f"{args.witness.stem}-{n}{args.witness.suffix}")
        path.write_text(witness_fixture(failure.trace, f"fuzz-witness-{n}", failure.reason), encoding="utf-8")
        paths.append(str(path))
    return paths


def _fuzz_json(
    args: argparse.Namespace, report: Any, established: bool, why: str, witnesses: list[str]
) -> dict[str, Any]:
    """``kconform fuzz --json``: the same facts as the text (docs/reports.md, "fuzz --json")."""
    ex = report.exercised
    verdict = "failed" if report.failures else ("met" if established else "not established")
    return {
        "kconform_fuzz": 1,
        "implementation": args.impl,
        "generation": args.generation,
        "level": args.level,
        "examples": args.examples,
        "runs": ex.runs,
        "seed": report.seed,
        "interrupted": report.interrupted,
        "verdict": verdict,
        "safety": why,
        "failures": [
            {"signature": f.signature, "reason": f.reason, "steps": len(f.trace.steps), "step": f.step, "witness": w}
            for f, w in zip(report.failures, witnesses, strict=True)
        ],
        "reference_findings": [
            {"invariant": f.invariant, "detail": f.detail, "steps": len(f.path), "expected": f.expected}
            for f in report.findings
        ],
        "exercised": {
            "steps": dict(ex.steps),
            "rules": dict(ex.rules),
            "refusals": dict(ex.refusals),
            "skipped": dict(ex.skipped),
            "shrink_runs": ex.shrink_runs,
            "seconds": round(ex.seconds, 3),
        },
    }


def _known_differences(paths: list[Path], impl: str, adapter: Any) -> dict[str, str]:
    """The known differences the expectations files give ``impl`` (by its ``--impl`` name or
    the name it reports): field path or property glob -> reason (``expectations.py``)."""
    from ..judging.expectations import load_expectations

    expectations, problems = load_expectations(paths)
    if problems:
        fail("invalid expectations:\n" + "\n".join(str(p) for p in problems))
    names = [impl]
    with contextlib.suppress(AdapterError):
        names.append(adapter.describe().name)
    return expectations.known(tuple(names))


def _richer(args: argparse.Namespace) -> Any:
    """The richer steps the explore flags ask for (``explore_alphabet.Richer``), or None."""
    from ..search.explore_alphabet import Richer

    every = args.rich
    richer = Richer(
        partial_fetches=every or args.partial_fetches,
        timer_ticks=every or args.timer_ticks,
        epoch_queries=every or args.epoch_queries,
        in_flight=every or args.in_flight,
    )
    return richer if richer.any else None


def cmd_explore(args: argparse.Namespace) -> int:
    from reference_impl import Config, ConfigError, config_from_dict

    from ..implementations.registry import UnknownImplementation, resolve
    from ..search.explore import explore, replay, witness_fixture

    adapter = None
    if args.impl:
        try:
            adapter = resolve(args.impl, timeout_s=args.timeout, start_timeout_s=args.start_timeout)
        except UnknownImplementation as exc:
            fail(str(exc))
    known = _known_differences(args.expectations or [], args.impl, adapter) if adapter is not None else {}
    names = ["A", "B", "C", "D", "E"][: args.replicas]
    rows, unexpected = [], 0
    records: list[dict[str, Any]] = []
    interrupted = False
    args.out.mkdir(parents=True, exist_ok=True)
    quiet = args.no_progress or args.json
    for generation in args.generation or list(GENERATIONS):
        if interrupted:
            break
        try:
            config: Config = config_from_dict(
                {
                    "replicas": names,
                    "generation": generation,
                    "min_insync_replicas": args.min_insync,
                    "unclean_leader_election": args.unclean,
                    "replica_high_watermark_checkpoint_interval_ms": args.checkpoint_interval,
                }
            )
        except ConfigError as exc:
            fail(f"--{exc.field.replace('_', '-')}: {exc.message}")
        if not quiet:
            print(
                f"explore {generation}: searching to depth {args.depth} (at most {args.seconds:g} s)", file=sys.stderr
            )
        try:
            result, tree = explore(
                config,
                args.depth,
                args.records,
                args.seconds,
                args.max_states,
                faults=args.faults,
                reduce=False if args.no_reduce else None,
                symmetry=args.symmetry,
                extra=_richer(args),
            )
        except KeyboardInterrupt:
            interrupted = True
            break
        if not quiet:
            print(
                f"explore {generation}: {result.states:,} states to depth {result.depth_reached} in "
                f"{result.seconds:.1f} s ({result.states_per_second:,.0f} states/s)",
                file=sys.stderr,
            )
        found = []
        record: dict[str, Any] = {"generation": generation, "findings": [], "disagreement": None}
        for finding in result.findings:
            name = f"explore-{generation}-{finding.invariant.lower()}"
            path = args.out / f"{name}.yaml"
            title = f"Shortest path to a {finding.invariant} violation ({finding.detail})"
            path.write_text(witness_fixture(config, finding.path, name, title), encoding="utf-8")
            note = "expected in this generation" if finding.expected else "UNEXPECTED: a spec bug"
            found.append(f"{finding.invariant} in {plural(len(finding.path), 'step')} ({note}): {path}")
            unexpected += not finding.expected
            record["findings"].append(
                {
                    "invariant": finding.invariant,
                    "detail": finding.detail,
                    "steps": len(finding.path),
                    "expected": finding.expected,
                    "witness": str(path),
                }
            )
        if adapter is not None:
            leaves = len(tree) - len({parent for parent, _ in tree.values() if parent is not None})
            progress = RateProgress(leaves, "paths", sys.stderr, enabled=not quiet)
            try:
                disagreement = replay(
                    adapter, config, tree, result, on_path=progress.update, level=args.level, known=known
                )
            except AdapterError as exc:
                progress.close()
                fail(f"implementation {args.impl!r} cannot start: {exc.message}\n{exc.detail}")
            except KeyboardInterrupt:
                progress.close()
                interrupted = True
                disagreement = result.disagreement
            progress.close()
            if disagreement is not None:
                unexpected += 1
                name = f"explore-{generation}-disagreement"
                path = args.out / f"{name}.yaml"
                title = f"Shortest path where {args.impl} fails level {args.level} ({disagreement.reason})"
                witness = witness_fixture(config, disagreement.path, name, title, level=args.level)
                path.write_text(witness, encoding="utf-8")
                level = f" --level {args.level}" if args.level != "exact" else ""
                found.append(
                    f"{args.impl} fails level {args.level} after {plural(len(disagreement.path), 'step')}: "
                    f"{disagreement.reason}: {path} (kconform run --impl '{args.impl}'{level} --fixtures {path})"
                )
                record["disagreement"] = {
                    "reason": disagreement.reason,
                    "steps": len(disagreement.path),
                    "step": disagreement.step,
                    "witness": str(path),
                }
            elif not result.paths_replayed:
                unexpected += 1
                skipped = "; ".join(f"{n} {reason}" for reason, n in result.paths_skipped.most_common(3))
                found.append(f"{args.impl}: no path could be judged ({skipped or 'no path'}): nothing established")
            elif not result.certificate()[0]:
                unexpected += 1
                found.append(f"{args.impl}: level {args.level} not established: {result.certificate()[1]}")
        record.update(
            states=result.states,
            transitions=result.transitions,
            depth=result.depth_reached,
            depth_completed=result.depth_completed,
            levels=result.levels,
            complete=result.complete,
            seconds=round(result.seconds, 3),
            rules=len(result.rules),
            paths_replayed=result.paths_replayed if adapter is not None else None,
            safety=result.certificate()[1] if adapter is not None and result.paths_replayed else None,
        )
        records.append(record)
        depth = f"{result.depth_reached}" + ("" if result.complete else f" of {args.depth} (budget ran out)")
        if not result.complete and result.depth_reached:
            depth = f"{result.depth_completed} complete, {result.depth_reached} reached (budget ran out)"
        rows.append(
            [
                generation,
                result.states,
                result.transitions,
                depth,
                f"{result.seconds:.1f}",
                f"{result.states_per_second:,.0f}",
                len(result.rules),
                result.paths_replayed if adapter is not None else "-",
                "\n".join(found) or "none",
            ]
        )
    if adapter is not None:
        adapter.close()
    if args.json:
        doc = {
            "kconform_explore": 1,
            "implementation": args.impl,
            "level": args.level,
            "depth_limit": args.depth,
            "interrupted": interrupted,
            "unexpected": unexpected,
            "generations": records,
        }
        emit(json.dumps(doc, indent=1) + "\n")
    else:
        headers = ["generation", "states", "transitions", "depth", "s", "states/s", "rules", "paths replayed"]
        emit(table(rows, [*headers, "findings"], maxcolwidths=[None] * 8 + [70]) + "\n")
        if interrupted:
            emit(f"INTERRUPTED (Ctrl-C): {len(rows)} generation(s) finished are shown\n")
    if interrupted:
        return 130
    return 1 if unexpected else 0


# --- parser ---------------------------------------------------------------------------


EPILOG = """\
exit codes:
  0  every result as expected
  1  some result unexpected: FAIL, ERROR or XPASS (fuzz: a disagreement was found)
  2  bad input or usage: a malformed fixture or expectations file, an unknown
     implementation, one that cannot start, an unreadable results file

examples:
  kconform run                                    the bundled reference, every fixture
  kconform run --impl my_adapter:adapter          a Python adapter (my_adapter.py here)
  kconform run --impl exec:'./my-broker --stdio'  any program speaking the stdio protocol
  kconform explain seed-03-data-loss-hw-truncation
  kconform fuzz --impl my_adapter:adapter --generation diverging-epoch

docs: README.md, docs/adapters.md, spec/adapter-protocol.md
"""


def _sub(sub: Any, name: str, summary: str, description: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name, help=summary, description=description, epilog=EPILOG, formatter_class=Formatter
    )
    return parser


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``kconform`` parser. With ``command`` naming a command defined here, the corpus
    commands (``generate``, ``replay``: ``conformance/cli/corpus.py``, whose imports of
    process pools and corpus readers and writers took a quarter of a ``kconform run``)
    are left out: nothing that parses or prints that command's arguments shows them.
    With None (``--help``), a mistyped command or a corpus command, every command is
    registered."""
    from reference_impl import __version__

    parser = argparse.ArgumentParser(
        prog="kconform",
        description="Check implementations of Kafka partition replication against an executable spec.",
        epilog=EPILOG,
        formatter_class=Formatter,
    )
    parser.add_argument("--version", action="version", version=f"kconform {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = _sub(
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

    lst = _sub(sub, "list", "list fixtures", "List the selected fixtures: id, title, tags and the source they cite.")
    add_selection(lst)
    lst.set_defaults(func=cmd_list)

    val = _sub(
        sub,
        "validate",
        "check fixture files against the schema",
        "Check fixture files against spec/fixture.schema.json and the model (steps, replica names, config). "
        "Every problem is printed as FILE:LINE: FIELD: MESSAGE.",
    )
    val.add_argument("paths", nargs="*", type=Path, help="files or folders (default: the bundled fixtures)")
    val.set_defaults(func=cmd_validate)

    exp = _sub(
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

    imp = _sub(sub, "impls", "list registered implementations", "List the implementations usable by name with --impl.")
    imp.set_defaults(func=cmd_impls)

    rep = _sub(sub, "report", "render a saved results file", "Render a results file written by `kconform run` again.")
    rep.add_argument("results", type=Path, help="a results file (e.g. out/kconform-results.json)")
    rep.add_argument("--format", choices=FORMATS, default="terminal", help="(default: terminal)")
    add_report_options(rep)
    rep.add_argument("-o", "--output", type=Path, metavar="FILE", help="write to FILE instead of stdout")
    rep.set_defaults(func=cmd_report)

    fz = _sub(
        sub,
        "fuzz",
        "random runs against the reference, step by step; shrink a disagreement",
        "Draw random runs of enabled steps, apply each to the implementation and the reference, compare after "
        "every step (at the chosen level), and shrink every distinct failure to its own witness fixture.",
    )
    fz.add_argument("--impl", required=True, metavar="SPEC", help="the implementation (as for run --impl)")
    fz.add_argument(
        "--generation", default="leader-epoch", choices=GENERATIONS, help="protocol generation (default: leader-epoch)"
    )
    fz.add_argument(
        "--examples",
        type=int,
        help="random runs (default: 100; 1000 at --level safety, where runs are on the implementation's own path "
        "and cost about a tenth)",
    )
    fz.add_argument("--steps", type=int, default=30, help="steps per run (default: 30)")
    fz.add_argument(
        "--witness",
        type=Path,
        default=Path("out/fuzz-witness.yaml"),
        help="where to write the shrunk failing run (default: out/fuzz-witness.yaml)",
    )
    fz.add_argument("--derandomize", action="store_true", help="the same runs every time (for CI): --seed 0")
    fz.add_argument("--seed", type=int, help="draw the runs from this seed (default: a fresh one, printed)")
    fz.add_argument(
        "--weights",
        metavar="KIND=W,...",
        help="relative weights of step kinds and combined steps (fetch_all, deliver_all) over the defaults, "
        "e.g. 'crash=5,consume=0' (docs/suite-strength.md, 'The fuzzer's distribution')",
    )
    fz.add_argument(
        "--level",
        choices=LEVELS,
        default="exact",
        help="exact: every step as the reference; settled: outcomes at quiescent points; safety: only the "
        "invariants, on the implementation's own observations (default: exact)",
    )
    fz.add_argument(
        "--expectations",
        action="append",
        type=Path,
        metavar="FILE",
        help="YAML with known_differences: {FIELD-OR-PROPERTY-GLOB: reason}, ignored (repeatable)",
    )
    fz.add_argument("--json", action="store_true", help="print the result as JSON (docs/reports.md, 'fuzz --json')")
    fz.add_argument("--no-progress", action="store_true", help="no progress line on the terminal")
    add_timeouts(fz)
    fz.set_defaults(func=cmd_fuzz)

    ex = _sub(
        sub,
        "explore",
        "every reachable state of a small cluster, to a depth: invariants and an optional implementation",
        "Breadth-first search over every enabled step from the initial state (states deduplicated), checking "
        "the spec's invariants on every reachable state; with --impl, every path of the search tree is replayed "
        "on the implementation and compared with the reference. Shortest witnesses are written as fixtures. "
        "See docs/explore.md.",
    )
    ex.add_argument("--generation", action="append", choices=GENERATIONS, help="repeatable (default: all three)")
    ex.add_argument("--replicas", type=int, choices=[2, 3, 4, 5], default=2, help="replicas A, B, ... (default: 2)")
    ex.add_argument("--records", type=int, default=2, help="at most this many produce steps per path (default: 2)")
    ex.add_argument("--depth", type=int, default=8, help="steps from the initial state (default: 8)")
    ex.add_argument(
        "--seconds",
        type=float,
        default=60.0,
        help="time budget per generation; then the depth reached is reported (default: 60)",
    )
    ex.add_argument("--max-states", type=int, help="state budget per generation (default: no limit)")
    ex.add_argument("--min-insync", type=int, default=1, help="min.insync.replicas (default: 1)")
    ex.add_argument("--unclean", action="store_true", help="unclean.leader.election.enable=true")
    ex.add_argument(
        "--checkpoint-interval",
        type=int,
        default=0,
        metavar="MS",
        help="replica.high.watermark.checkpoint.interval.ms; 0 = on every change (default: 0)",
    )
    ex.add_argument(
        "--faults",
        action="store_true",
        help="also elections that notify every live broker but one, and power failures losing a broker's log "
        "(about seven times the states per level; default: off)",
    )
    ex.add_argument(
        "--partial-fetches",
        action="store_true",
        help="also fetches capped at one record where the leader has two or more (default: off)",
    )
    ex.add_argument(
        "--timer-ticks",
        action="store_true",
        help="also ticks to 1 ms before, at and after each timer that can fire next (default: off)",
    )
    ex.add_argument(
        "--epoch-queries",
        action="store_true",
        help="also a client's epoch_query to every live broker, current epoch and the one before (default: off)",
    )
    ex.add_argument(
        "--in-flight",
        action="store_true",
        help="also elections notifying nobody or one broker at once, the rest in flight (default: off)",
    )
    ex.add_argument("--rich", action="store_true", help="all four of the above (docs/explore.md, 'A richer alphabet')")
    ex.add_argument(
        "--symmetry",
        action="store_true",
        help="also merge states equal up to renaming the followers: fewer states, but NOT exact (an election "
        "picks the first eligible replica in assignment order; docs/explore.md) (default: off)",
    )
    ex.add_argument(
        "--no-reduce",
        action="store_true",
        help="compare states whole: no merging of message orders, every step tried, no sleep sets "
        "(default: reduce, exact, with 3 replicas or more)",
    )
    ex.add_argument("--impl", metavar="SPEC", help="also replay every path on this implementation (as run --impl)")
    ex.add_argument("--json", action="store_true", help="print the result as JSON (docs/reports.md, 'explore --json')")
    ex.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    ex.add_argument(
        "--level",
        choices=LEVELS,
        default="exact",
        help="the level each replayed path is judged at, as in run (default: exact; see docs/levels.md)",
    )
    ex.add_argument(
        "--expectations",
        action="append",
        type=Path,
        metavar="FILE",
        help="expectations file: its known_differences are ignored (repeatable; docs/reports.md)",
    )
    ex.add_argument(
        "--out", type=Path, default=Path("out/explore"), help="where witness fixtures go (default: out/explore)"
    )
    add_timeouts(ex)
    ex.set_defaults(func=cmd_explore)

    sen = _sub(
        sub,
        "sensitivity",
        "how strong is a suite: run it against every zoo member (faulty implementations)",
        "Run the selected fixtures against every member of the zoo (the reference with one replication rule "
        "broken, each modelling a Kafka bug or a misreading; --list shows them) and print which members are "
        "killed, by which fixtures, the shortest witness and the rules at it, the kill rate and the survivors. "
        "Exit code 1 if a member survives. See docs/suite-strength.md.",
    )
    add_selection(sen)
    from .sensitivity import add_arguments as add_sensitivity_arguments

    add_sensitivity_arguments(sen)

    dif = _sub(
        sub,
        "diff",
        "regressions and fixes between two results files",
        "Compare two results files: regressions (passed before, not now) make the exit code 1.",
    )
    dif.add_argument("old", type=Path, help="the earlier results file")
    dif.add_argument("new", type=Path, help="the later results file")
    dif.add_argument("--format", choices=["terminal", "json"], default="terminal", help="(default: terminal)")
    dif.set_defaults(func=cmd_diff)

    if command is None or command not in sub.choices:
        from .corpus import add_commands  # generate, replay (corpora at scale)

        add_commands(sub)
    return parser


def _command_named(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first argument, unless that is an option (the
    top-level options, ``--help`` and ``--version``, take no value)."""
    return argv[0] if argv and not argv[0].startswith("-") else None


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command_named(arguments))
    args = parser.parse_args(arguments)
    try:
        return int(args.func(args))
    except UsageError as exc:
        print(f"kconform: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kconform: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # a reader went away before emit ran (e.g. in a progress line)
        return 0


if __name__ == "__main__":
    sys.exit(main())
