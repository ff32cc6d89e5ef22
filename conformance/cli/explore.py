"""``kconform explore``: bounded exhaustive search over the reference from a small cluster,
the invariants on every reachable state, every path optionally replayed on an
implementation; shortest witnesses written as fixtures (docs/explore.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..adapters.base import AdapterError
from ..corpus.progress import Progress as RateProgress
from ..judging.levels import LEVELS
from .common import GENERATIONS, add_timeouts, command_parser, emit, fail, known_differences, plural, table


def register(sub: Any) -> None:
    ex = command_parser(
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
        help="time budget per generation; then the depth reached is reported (the level it cut counts the states "
        "found by then; on several workers, a lower bound: those bound for another worker are not counted) "
        "(default: 60)",
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
        "(default: reduce, exact: all three with 3 replicas or more; with 2, steps that change nothing skipped)",
    )
    ex.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="search on N processes: the same states and witnesses, sooner on idle cores, for 1.4-1.6 times the "
        "CPU; not with --impl, which needs the whole search tree (docs/explore.md, 'On several processes') "
        f"(default: the cores available, at most {MAX_DEFAULT_WORKERS}; 1 with --impl)",
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


MAX_DEFAULT_WORKERS = 4
"""The most workers ``--workers`` defaults to: a state's owner reads only its leader,
epoch and produce count (``explore_parallel.Search.owner``), a few dozen values with two
replicas, so more workers share them unevenly (four: 1.06-1.2 times an even share)."""


def _workers(args: argparse.Namespace) -> int:
    """``--workers``, or the cores available (at most ``MAX_DEFAULT_WORKERS``)."""
    from ..corpus.backends import default_workers

    return max(1, args.workers if args.workers is not None else min(default_workers(), MAX_DEFAULT_WORKERS))


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
    from ..search.explore import replay, witness_fixture
    from ..search.explore_parallel import search

    adapter = None
    if args.impl:
        try:
            adapter = resolve(args.impl, timeout_s=args.timeout, start_timeout_s=args.start_timeout)
        except UnknownImplementation as exc:
            fail(str(exc))
    known = known_differences(args.expectations or [], args.impl, adapter) if adapter is not None else {}
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
            result, tree = search(
                config,
                args.depth,
                args.records,
                args.seconds,
                args.max_states,
                faults=args.faults,
                reduce=False if args.no_reduce else None,
                symmetry=args.symmetry,
                extra=_richer(args),
                workers=1 if adapter is not None else _workers(args),
                tree=adapter is not None,
                # alone, the reference's outputs need not tell states apart (OUTPUTS)
                merge_outputs=adapter is None,
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
            outputs_merged=result.outputs_merged,
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
        if adapter is None and rows:
            emit("states: those that differ only in their outputs counted as one (docs/explore.md)\n")
        if interrupted:
            emit(f"INTERRUPTED (Ctrl-C): {len(rows)} generation(s) finished are shown\n")
    if interrupted:
        return 130
    return 1 if unexpected else 0
