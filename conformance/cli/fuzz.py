"""``kconform fuzz``: random runs on an implementation judged step by step, every distinct
failure shrunk to its own witness fixture, and the invariants the reference itself breaks."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from reference_impl.config import Generation

from ..adapters.base import AdapterError
from ..corpus.progress import Progress as RateProgress
from ..judging.levels import LEVELS
from .common import GENERATIONS, add_timeouts, command_parser, emit, fail, known_differences, plural


def register(sub: Any) -> None:
    fz = command_parser(
        sub,
        "fuzz",
        "random runs against the reference, step by step; shrink a disagreement",
        "Draw random runs of enabled steps, apply each to the implementation and the reference, compare after "
        "every step (at the chosen level), and shrink every distinct failure to its own witness fixture.",
    )
    fz.add_argument("--impl", required=True, metavar="SPEC", help="the implementation (as for run --impl)")
    fz.add_argument(
        "--generation",
        default=None,
        choices=GENERATIONS,
        help="protocol generation (default: leader-epoch, or the first the implementation implements)",
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


def cmd_fuzz(args: argparse.Namespace) -> int:
    from ..implementations.registry import UnknownImplementation, resolve
    from ..search.distribution import WeightsError, parse_weights
    from ..search.explore import witness_fixture as invariant_witness
    from ..search.stateful import fuzz_all

    try:
        weights = parse_weights(args.weights or "")
    except WeightsError as exc:
        fail(str(exc))
    try:
        adapter = resolve(args.impl, timeout_s=args.timeout, start_timeout_s=args.start_timeout)
    except UnknownImplementation as exc:
        fail(str(exc))
    ignore = known_differences(args.expectations or [], args.impl, adapter)
    if args.examples is None:
        args.examples = 1000 if args.level == "safety" else 100
    progress = RateProgress(args.examples, "runs", sys.stderr, enabled=not args.no_progress and not args.json)
    try:
        implemented = adapter.describe().generations
    except AdapterError as exc:
        fail(f"implementation {args.impl!r} cannot start: {exc.message}\n{exc.detail}")
    if args.generation is None:
        args.generation = "leader-epoch" if "leader-epoch" in implemented or not implemented else implemented[0]
    elif implemented and args.generation not in implemented:
        fail(
            f"implementation {args.impl!r} does not implement {args.generation} (it implements "
            f"{', '.join(implemented)}): every run would be skipped; name one of those with --generation"
        )
    generation = Generation(args.generation)
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
        paths = [str(path) for path in _fuzz_witnesses(args, report)]
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
    for n, (failure, path) in enumerate(zip(report.failures, _fuzz_witnesses(args, report), strict=True), 1):
        level = " --level safety" if failure.trace.level == "safety" or failure.signature.startswith("safety:") else ""
        level += " --check-progress" if failure.signature.startswith("safety:PROGRESS-") else ""
        emit(
            f"\n{n}. {failure.reason}\n   after {plural(len(failure.trace.steps), 'step')}; witness fixture: {path}\n"
            f"   replay: kconform run --impl '{args.impl}'{level} --fixtures {path}\n"
        )
    emit("\n" + found + summary)
    return 130 if report.interrupted else 1


def _fuzz_witnesses(args: argparse.Namespace, report: Any) -> list[Path]:
    """Write each failure's witness fixture (``--witness``, then ``-2``, ``-3``... beside
    it), for the text and the JSON output alike; their paths."""
    from ..search.stateful import witness_fixture

    args.witness.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for n, failure in enumerate(report.failures, 1):
        path = args.witness if n == 1 else args.witness.with_name(f"{args.witness.stem}-{n}{args.witness.suffix}")
        path.write_text(witness_fixture(failure.trace, f"fuzz-witness-{n}", failure.reason), encoding="utf-8")
        paths.append(path)
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
