"""How strong is a suite? Run it against every zoo member and see which it kills.

A zoo member (``conformance/zoo``) is the reference with one replication rule broken the
way Kafka once broke it or a reader could misread it. A fixture *kills* a member when the
member fails it; a member no fixture kills *survives*, and shows a rule the suite does not
pin. The kill rate over the zoo is a suite author's measure of their corpus, as mutation
score is for unit tests. Reading the output: docs/suite-strength.md.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from reference_impl import Config, Generation, State, Step, StepRejected, apply, initial_state

from ..fixtures.loading import Fixture
from ..judging.runner import FixtureResult, reference_trace, run_fixtures
from ..zoo import Member
from .explore import Edges, Exploration, edges, explore, replay
from .explore_alphabet import PLAIN, Richer


@dataclass(frozen=True)
class Kill:
    """One fixture that kills a member: where they first differ."""

    fixture: str
    step: int
    """The step (from 1) where the member first diverges: the witness length."""
    length: int
    """How many steps the fixture has."""
    rules: tuple[str, ...]
    """The spec rules the reference fires at that step."""
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"fixture": self.fixture, "step": self.step, "length": self.length, "rules": list(self.rules)}


@dataclass
class Verdict:
    """What the suite did to one member."""

    member: Member
    kills: list[Kill] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """Fixtures the member could not run (an exception: a bug in the member, not a kill)."""
    errored: list[Kill] = field(default_factory=list)
    """The same cases as ``errors``, where they stopped (a rule knockout counts them as
    detections, ``knockout_sweep``; a zoo member's error stays a bug in the member)."""
    seconds: float = 0.0

    @property
    def killed(self) -> bool:
        return bool(self.kills)

    @property
    def shortest(self) -> Kill | None:
        """The kill with the shortest witness (then the shortest fixture)."""
        return min(self.kills, key=lambda k: (k.step, k.length, k.fixture), default=None)

    def to_dict(self) -> dict[str, Any]:
        shortest = self.shortest
        return {
            "member": self.member.name,
            "catalogue_entry": self.member.number,
            "source": self.member.source,
            "generations": list(self.member.generations),
            "rules_broken": list(self.member.rules),
            "killed": self.killed,
            "killed_by": [k.to_dict() for k in self.kills],
            "shortest": shortest.to_dict() if shortest else None,
            "errors": self.errors,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class Sensitivity:
    """The suite against the whole zoo (or the members selected)."""

    verdicts: list[Verdict]
    fixtures: int
    seconds: float
    level: str = "exact"
    fuzz_budget: int = 0
    explore_depth: int = 0

    @property
    def killed(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.killed]

    @property
    def survivors(self) -> list[Verdict]:
        return [v for v in self.verdicts if not v.killed]

    @property
    def errored(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.errors]

    @property
    def kill_rate(self) -> float:
        return len(self.killed) / len(self.verdicts) if self.verdicts else 0.0

    @property
    def median_witness(self) -> float | None:
        steps = [v.shortest.step for v in self.killed if v.shortest]
        return statistics.median(steps) if steps else None

    @property
    def ok(self) -> bool:
        """Every member killed and none errored."""
        return not self.survivors and not self.errored

    def to_dict(self) -> dict[str, Any]:
        return {
            "members": len(self.verdicts),
            "killed": len(self.killed),
            "kill_rate": round(self.kill_rate, 4),
            "survivors": [v.member.name for v in self.survivors],
            "median_witness_steps": self.median_witness,
            "fixtures": self.fixtures,
            "level": self.level,
            "fuzz_budget": self.fuzz_budget,
            "explore_depth": self.explore_depth,
            "seconds": round(self.seconds, 3),
            "verdicts": [v.to_dict() for v in self.verdicts],
        }


def _kill(result: FixtureResult, fixture: Fixture) -> Kill:
    divergence = result.divergence or {}
    return Kill(
        fixture=result.fixture,
        step=int(divergence.get("step", result.steps_run or len(fixture.steps))),
        length=len(fixture.steps),
        rules=tuple(divergence.get("rules") or ()),
        reason=result.reason,
    )


def judge(member: Member, fixtures: Sequence[Fixture], traces: dict[str, Any], level: str = "exact") -> Verdict:
    """Run every fixture on one member, judged at ``level`` (docs/levels.md)."""
    started = time.perf_counter()
    by_id = {f.id: f for f in fixtures}
    adapter = member.build()
    try:
        _, results = run_fixtures(adapter, member.name, fixtures, traces, level=level)
    finally:
        adapter.close()
    verdict = Verdict(member)
    for result in results:
        if result.outcome == "failed":
            verdict.kills.append(_kill(result, by_id[result.fixture]))
        elif result.outcome == "errored" and result.malformed:
            # it answered, outside the protocol (a high watermark of -1): the judge saw the
            # defect, as it sees a wrong value; an exception is the member's own bug
            # (at the step it answered, ``steps_run``, within the fixture as for an error;
            # with the rules the reference fires there)
            kill = _kill(result, by_id[result.fixture])
            at = min(kill.step, kill.length)
            fired = traces.get(result.fixture) or ()
            verdict.kills.append(replace(kill, step=at, rules=tuple(fired[at - 1]) if at <= len(fired) else ()))
        elif result.outcome == "errored":
            verdict.errors.append(f"{result.fixture}: {result.reason}")
            fixture = by_id[result.fixture]
            at = min(result.steps_run + 1, len(fixture.steps))  # the step that raised
            verdict.errored.append(replace(_kill(result, fixture), step=at))
    verdict.seconds = time.perf_counter() - started
    return verdict


def fuzz_kills(
    member: Member, budget: int, generations: Sequence[Generation], level: str = "exact", seed: int = 0
) -> list[Kill]:
    """``kconform fuzz`` as a suite: ``budget`` random runs per generation (seeded, so the
    verdict is reproducible), stopping at the first generation that kills the member."""
    from .stateful import fuzz_all

    for generation in generations:
        report = fuzz_all(member.build(), generation, examples=budget, level=level, seed=seed, stop_at_first=True)
        if report.failures:
            failure = report.failures[0]
            steps = len(failure.trace.steps)
            name = f"fuzz:{generation.value}:{failure.signature}"
            return [Kill(name, steps, steps, tuple(failure.rules), failure.reason)]
    return []


@dataclass
class Explored:
    """One configuration's search tree, shared by every member replayed on it."""

    config: Config
    result: Exploration
    tree: dict[State, tuple[State | None, Step | None]]
    search: str = ""

    @property
    def name(self) -> str:
        return f"explore:{self.config.generation.value}:{self.search}"

    @cached_property
    def edges(self) -> Edges:
        """The tree from its root, computed once for every member replayed on it."""
        return edges(self.tree)


@dataclass(frozen=True)
class Search:
    """One bounded search ``--explore-depth D`` runs: a config shape, how much shallower
    than D it goes (a wider tree gets less depth), how many produces a path may have, and
    whether its alphabet has the fault steps (``explore.fault_steps``)."""

    name: str
    shallower: int
    records: int
    settings: tuple[tuple[str, Any], ...]
    replicas: int = 2
    faults: bool = False
    richer: Richer = PLAIN
    """Richer steps in its alphabet (``explore_alphabet``)."""
    only: frozenset[str] | None = None
    """The step kinds kept (None: all): a narrower alphabet, searched deeper."""

    def config(self, generation: Generation) -> Config:
        return Config(replicas=("A", "B", "C", "D", "E")[: self.replicas], generation=generation, **dict(self.settings))


CHECKPOINT_EVERY_CHANGE = (("replica_high_watermark_checkpoint_interval_ms", 0),)
SHORT_TIMERS = (
    ("replica_high_watermark_checkpoint_interval_ms", 500),
    ("replica_lag_time_max_ms", 1000),
    ("replica_fetch_wait_max_ms", 500),
)
SEARCHES = (
    Search("2r-2rec", 0, 2, CHECKPOINT_EVERY_CHANGE),
    Search("3r", 1, 1, CHECKPOINT_EVERY_CHANGE, replicas=3),
    Search("2r-isr2", 1, 1, (*CHECKPOINT_EVERY_CHANGE, ("min_insync_replicas", 2))),
    Search("2r-timers", 1, 1, SHORT_TIMERS),
    Search("2r-faults", 1, 1, CHECKPOINT_EVERY_CHANGE, faults=True),
    Search("2r-partial", 0, 2, CHECKPOINT_EVERY_CHANGE, richer=Richer(partial_fetches=True)),
    Search("2r-timers-faults", -1, 1, SHORT_TIMERS, faults=True),
    Search(
        "2r-deep",
        -4,
        2,
        CHECKPOINT_EVERY_CHANGE,
        richer=Richer(partial_fetches=True),
        only=frozenset(
            {"produce", "fetch", "deliver_fetch", "epoch_request", "deliver_epoch", "crash", "restart", "elect"}
        ),
    ),
)
"""The searches of ``kconform sensitivity --explore-depth D``, each in every generation:
two replicas to depth D with up to two records (a superset of the one-record tree, which
is therefore not searched apart); three replicas, min.insync 2, short timers (lag 1000 ms,
fetch wait and HW checkpoint 500 ms, so the alphabet's ticks cross them) and two replicas
with the fault steps (elections notifying some brokers, power failures: they multiply a
tree's states by about seven a level) one level less. All but the timers search
checkpoint the HW on every change.

Then three searches for what those miss (issue 22): two replicas with fetches capped at
one record (``explore_alphabet.Richer``) to depth D; short timers with the fault steps one
level *deeper* (a power failure behind a checkpoint written on the timer); and a narrow
alphabet (produce, fetch, capped fetch, deliver, epoch request and answer, crash, restart,
elect: no ticks, consumes or ISR checks) four levels deeper, for stories of 8-9 steps."""


def explore_trees(
    generations: Sequence[Generation], depth: int, searches: Sequence[Search] = SEARCHES, seconds: float | None = None
) -> list[Explored]:
    """Each search's tree, in the order of ``searches`` (a member killed early skips the rest)."""
    out = []
    for search in searches:
        for generation in generations:
            config = search.config(generation)
            depth_here = max(1, depth - search.shallower)
            extra = search.richer if search.richer.any else None
            result, tree = explore(
                config, depth_here, search.records, seconds, faults=search.faults, extra=extra, only=search.only
            )
            out.append(Explored(config, result, tree, search.name))
    return out


def explore_kills(member: Member, trees: Sequence[Explored]) -> list[Kill]:
    """Every path of each search tree replayed on the member (``explore.replay``); the
    shortest disagreement is the kill."""
    for explored in trees:
        if explored.config.generation not in member.generations:
            continue  # the member is the reference there (``Member.generations``: where it differs)
        adapter = member.build()
        try:
            found = replay(adapter, explored.config, explored.tree, explored.result, first=True, tree=explored.edges)
        finally:
            adapter.close()
        if found is not None:
            n = len(found.path)
            state = initial_state(explored.config)
            rules: tuple[str, ...] = ()
            for step in found.path:
                try:
                    state = apply(state, step)
                    rules = state.fired
                except StepRejected as exc:  # the refused step the member performed
                    rules = (exc.rule,)
            return [Kill(explored.name, n, n, rules, found.reason)]
    return []


def sensitivity(
    members: Iterable[Member],
    fixtures: Sequence[Fixture],
    progress: Callable[[Verdict], None] | None = None,
    level: str = "exact",
    fuzz_budget: int = 0,
    explore_depth: int = 0,
    generations: Sequence[Generation] = tuple(Generation),
) -> Sensitivity:
    """Judge every member against ``fixtures`` at ``level`` (reference traces computed once).

    ``exact`` is the measure of a suite; ``settled`` or ``safety`` show which bugs a
    judge at that level no longer sees (a bug only in bookkeeping fields or in timing).
    ``fuzz_budget``: also fuzz each member not yet killed (that many runs per generation);
    ``explore_depth``: also replay the search trees of small configs to that depth."""
    started = time.perf_counter()
    traces = {f.id: reference_trace(f) for f in fixtures}
    trees = explore_trees(generations, explore_depth) if explore_depth else []
    verdicts = []
    for member in members:
        verdict = judge(member, fixtures, traces, level)
        t0 = time.perf_counter()
        if not verdict.killed and trees:
            verdict.kills += explore_kills(member, trees)
        if not verdict.killed and fuzz_budget:
            verdict.kills += fuzz_kills(member, fuzz_budget, generations, level)
        verdict.seconds += time.perf_counter() - t0
        verdicts.append(verdict)
        if progress is not None:
            progress(verdict)
    out = Sensitivity(verdicts, len(fixtures), time.perf_counter() - started, level)
    out.fuzz_budget, out.explore_depth = fuzz_budget, explore_depth
    return out


def render(result: Sensitivity, table: Callable[[list[list[Any]], list[str]], str]) -> str:
    """The terminal report: one row per member, then the kill rate and the survivors."""
    rows = []
    for v in result.verdicts:
        shortest = v.shortest
        if shortest is None:
            status = "ERRORED" if v.errors else "SURVIVED"
            rows.append([v.member.number, v.member.name, status, "-", "-", "-"])
            continue
        by = ", ".join(sorted({k.fixture.split("/")[0] for k in v.kills})[:3])
        more = len({k.fixture.split("/")[0] for k in v.kills}) - 3
        by += f" (+{more})" if more > 0 else ""
        witness = f"{shortest.step} of {shortest.length}"
        rows.append(
            [
                v.member.number,
                v.member.name,
                f"killed by {len(v.kills)}",
                f"{shortest.fixture} step {witness}",
                ", ".join(shortest.rules[:4]) + (" ..." if len(shortest.rules) > 4 else ""),
                by,
            ]
        )
    out = table(rows, ["#", "member", "verdict", "shortest kill (step of length)", "rules at that step", "killed by"])
    lines = [out, ""]
    n, k = len(result.verdicts), len(result.killed)
    level = "" if result.level == "exact" else f" judged at level {result.level}"
    suites = [f"{result.fixtures} fixture cases"]
    suites += [f"fuzz ({result.fuzz_budget} runs per generation)"] if result.fuzz_budget else []
    suites += [f"explore (depth {result.explore_depth})"] if result.explore_depth else []
    lines.append(f"kill rate: {k}/{n} members ({result.kill_rate:.0%}) by {' + '.join(suites)}{level}")
    if result.median_witness is not None:
        lines.append(f"median shortest witness: {result.median_witness:g} steps")
    if result.survivors:
        lines.append("survivors (no fixture fails them):")
        lines += [f"  {v.member.name}: {v.member.summary} [{', '.join(v.member.rules)}]" for v in result.survivors]
    for v in result.errored:
        lines.append(
            f"errored: {v.member.name}: {v.errors[0]}" + (f" (+{len(v.errors) - 1})" if len(v.errors) > 1 else "")
        )
    lines.append(f"time: {result.seconds:.1f} s")
    return "\n".join(lines) + "\n"
