"""``kconform sensitivity``: the suite against every zoo member (``search/sensitivity.py``),
or with ``--knockout`` against a mutant per spec rule (``search/knockout_sweep.py``).

The zoo and the runner are imported only when the command runs, so ``kconform --help``
stays instant.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .common import add_selection, command_parser, emit, fail, fixture_paths, select, table

if TYPE_CHECKING:
    from reference_impl import Generation

    from ..adapters.base import Description
    from ..fixtures.loading import Fixture


def register(sub: Any) -> None:
    p = command_parser(
        sub,
        "sensitivity",
        "how strong is a suite: run it against every zoo member (faulty implementations)",
        "Run the selected fixtures against every member of the zoo (the reference with one replication rule "
        "broken, each modelling a Kafka bug or a misreading; --list shows them) and print which members are "
        "killed, by which fixtures, the shortest witness and the rules at it, the kill rate and the survivors. "
        "Exit code 1 if a member survives. See docs/suite-strength.md.",
    )
    add_selection(p)
    p.add_argument(
        "--zoo",
        action="append",
        default=[],
        metavar="NAME",
        help="only this zoo member (repeatable; default: every member, see --list)",
    )
    p.add_argument("--list", action="store_true", help="list the zoo members and exit")
    p.add_argument(
        "--like",
        metavar="SPEC",
        help="judge every member with this implementation's shape (as for run --impl): its step kinds, step "
        "fields, reported fields and capabilities, rounds delivered by themselves; which bugs the suite still "
        "catches in an implementation shaped like yours (docs/suite-strength.md)",
    )
    p.add_argument(
        "--level",
        choices=["exact", "settled", "safety"],
        default="exact",
        help="how each fixture is judged (docs/levels.md): settled or safety show which members a judge at "
        "that level no longer sees (default: exact)",
    )
    p.add_argument(
        "--fuzz-budget",
        type=int,
        default=0,
        metavar="N",
        help="also fuzz every member no fixture kills: N random runs per generation, seeded "
        "(kconform fuzz's default is 100; default: no fuzzing)",
    )
    p.add_argument(
        "--explore-depth",
        type=int,
        default=0,
        metavar="D",
        help="also replay every path of bounded exhaustive searches to depth D (each generation: 2 replicas "
        "with one record and with two; 3 replicas, min.insync 2 and short timers one level less) on every "
        "member not yet killed (default: no exploration)",
    )
    p.add_argument(
        "--knockout",
        action="store_true",
        help="instead of the zoo, knock out every numbered rule of the spec in turn (mutants built from the "
        "reference's code, search/knockout.py) and show which fixture cases kill each (docs/suite-strength.md)",
    )
    p.add_argument(
        "--rule",
        action="append",
        default=[],
        metavar="ID",
        help="with --knockout: only this rule (repeatable; default: every rule of spec/replication.md)",
    )
    p.add_argument(
        "--html",
        type=Path,
        metavar="FILE",
        help="with --knockout: also write the rule x fixture matrix as one HTML page to FILE",
    )
    p.add_argument("--format", choices=["terminal", "json"], default="terminal", help="(default: terminal)")
    p.add_argument("--no-progress", action="store_true", help="no progress line on the terminal")
    p.set_defaults(func=cmd_sensitivity)


def cmd_sensitivity(args: argparse.Namespace) -> int:
    from ..search.sensitivity import Verdict, render, sensitivity
    from ..zoo import MEMBERS, UnknownMember, get

    if args.knockout:
        return cmd_knockout(args)
    if args.rule or args.html:
        fail("--rule and --html go with --knockout")
    if args.list:
        rows = [[m.number, m.name, ", ".join(m.rules), _generations(m.generations), m.source] for m in MEMBERS]
        emit(table(rows, ["#", "member", "breaks", "differs in", "models"], maxcolwidths=[None, None, 30, 12, 60]))
        emit(f"\n\n{len(MEMBERS)} members; use one as an implementation with --impl zoo:NAME\n")
        return 0
    try:
        members = [get(name) for name in args.zoo] if args.zoo else list(MEMBERS)
    except UnknownMember as exc:
        fail(str(exc))
    like = _description_of(args.like) if args.like else None
    if like is not None:
        from ..zoo.shaped import shaped

        members = [shaped(m, like) for m in members]
    from reference_impl import Generation

    from ..fixtures.loading import fixture_files

    searching = args.fuzz_budget > 0 or args.explore_depth > 0
    # an empty folder measures fuzz and explore alone
    fixtures = [] if searching and (named := fixture_paths(args)) and not fixture_files(named) else select(args)
    generations = [Generation(g) for g in args.generation] or list(Generation)
    from ..corpus.progress import Progress

    show = not args.no_progress and args.format == "terminal" and sys.stderr.isatty()
    meter = Progress(len(members), "members", sys.stderr, enabled=show)  # rate and ETA
    done = [0]

    def progress(verdict: Verdict) -> None:
        done[0] += 1
        meter.what = f"members, last {verdict.member.name}"
        meter.update(done[0])

    if like is not None:  # the reference with the same shape first: what it fails is the shape's, not a bug's
        _control(args, like, fixtures, generations)
    result = sensitivity(
        members, fixtures, progress, args.level, args.fuzz_budget, args.explore_depth, generations=generations
    )
    meter.close()
    if args.format == "json":
        doc = result.to_dict()
        if like is not None:
            doc["like"] = {"implementation": args.like, **_shape(like)}
        emit(json.dumps(doc, indent=1) + "\n")
    else:
        if like is not None:
            emit(_shape_line(args.like, like))
        emit(render(result, lambda rows, headers: table(rows, headers, maxcolwidths=_widths(headers))))
    return 0 if result.ok else 1


def cmd_knockout(args: argparse.Namespace) -> int:
    """``kconform sensitivity --knockout``: every rule's knockouts against the suite."""
    from reference_impl import Generation

    from ..fixtures.loading import fixture_files
    from ..reports.knockout import matrix_html, terminal
    from ..search.knockout import spec_rules
    from ..search.knockout_sweep import sweep

    if args.zoo or args.list or args.like:
        fail("--knockout runs the rules' knockouts, not the zoo: leave out --zoo, --list and --like")
    known = spec_rules()
    unknown = [r for r in args.rule if r not in known]
    if unknown:
        fail(f"no rule {', '.join(unknown)} in spec/replication.md (rules: {', '.join(known)})")
    searching = args.fuzz_budget > 0 or args.explore_depth > 0
    fixtures = [] if searching and (named := fixture_paths(args)) and not fixture_files(named) else select(args)
    generations = [Generation(g) for g in args.generation] or list(Generation)
    show = not args.no_progress and args.format == "terminal" and sys.stderr.isatty()

    def progress(done: int, total: int, knockout: Any) -> None:
        if show:
            sys.stderr.write(f"\r[{done}/{total}] {knockout.id}"[:79].ljust(79))
            sys.stderr.flush()

    result = sweep(
        fixtures,
        args.rule or None,
        progress,
        args.level,
        args.fuzz_budget,
        args.explore_depth,
        generations=generations,
    )
    if show:
        sys.stderr.write("\r" + " " * 79 + "\r")
    if args.html:
        args.html.parent.mkdir(parents=True, exist_ok=True)
        args.html.write_text(matrix_html(result), encoding="utf-8")
    if args.format == "json":
        emit(json.dumps(result.to_dict(), indent=1) + "\n")
    else:
        widths = [None, None, None, None, None, 50]
        emit(terminal(result, lambda rows, headers: table(rows, headers, maxcolwidths=widths)))
        if args.html:
            emit(f"matrix: {args.html}\n")
    return 0 if result.ok else 1


def _description_of(spec: str) -> Description:
    """The description ``spec``'s implementation gives (started for that, then closed)."""
    from ..adapters.base import AdapterError
    from ..implementations.registry import ImplementationUnavailable, UnknownImplementation, resolve

    try:
        adapter = resolve(spec)
    except (UnknownImplementation, ImplementationUnavailable, AdapterError) as exc:
        fail(f"--like {spec}: {exc}")
    try:
        return adapter.describe()
    except AdapterError as exc:
        fail(f"--like {spec}: describe: {exc.message}")
    finally:
        adapter.close()


def _control(
    args: argparse.Namespace, like: Description, fixtures: Sequence[Fixture], generations: Sequence[Generation]
) -> None:
    """Exit 2 if the reference, shaped like ``--like``, fails anything the members are
    judged by: every member would fail it too, for the shape and not for its bug."""
    from ..search.sensitivity import sensitivity
    from ..zoo.shaped import CONTROL, shaped

    control = sensitivity(
        [shaped(CONTROL, like)], fixtures, None, args.level, args.fuzz_budget, args.explore_depth, generations
    ).verdicts[0]
    first = control.shortest
    if first is not None:
        fail(
            f"--like {args.like}: the reference itself, with that shape, fails at level {args.level} "
            f"({len(control.kills)} kill(s), e.g. {first.fixture} at step {first.step}: {first.reason.strip()[:200]}), "
            "so every member would fail there whatever its bug; judge at the level such an implementation "
            "meets (--level settled for one that receives answers by itself)"
        )


def _shape(like: Description) -> dict[str, Any]:
    """What ``--like`` takes from the description (``zoo/shaped.py``)."""
    return {
        "steps": list(like.steps),
        "fields": list(like.fields),
        "replica_fields": list(like.replica_fields),
        "initial_state": like.initial_state,
    }


def _shape_line(spec: str, like: Description) -> str:
    initial = "" if like.initial_state else "; no initial: starts"
    return (
        f"every member judged with the shape of {spec}: steps {', '.join(like.steps)}; fields "
        f"{', '.join(like.fields)}; replica fields {', '.join(like.replica_fields)}{initial}\n\n"
    )


def _generations(generations: tuple[str, ...]) -> str:
    short = {"hw-truncation": "HT", "leader-epoch": "LE", "diverging-epoch": "DE"}
    return "/".join(short.get(g, g) for g in generations)


def _widths(headers: list[str]) -> list[Any]:
    return [None, None, None, 45, 30, 45][: len(headers)]
