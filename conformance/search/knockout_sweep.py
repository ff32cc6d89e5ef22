"""``kconform sensitivity --knockout``: every rule's knockouts against a suite.

Each knockout (``knockout.py``) is run on the fixtures as a zoo member is
(``sensitivity.judge``), and, on request, fuzzed and explored when no fixture kills it.
Knockouts that are one mutant (two rules on one paragraph) run once. The result is per
knockout (killed, survived, equivalent, errored) and per rule, and a rule x fixture
matrix: which fixture cases kill each rule's knockouts, and the rules whose weakest
knockout fewer than two cases kill in a generation where the rule applies
(docs/suite-strength.md).

A fixture case the knockout *errors* on (the changed reference raises, or loops past
``knockout.STEP_SECONDS`` of CPU) detects it as a failing case does: ``kconform run``
shows that case errored and exits non-zero, so the implementation the knockout stands for
does not pass the suite. Those cases are counted as kills and named apart ("killed by N
(M by error)"); a case skipped because the knockout hung earlier (``not run again``)
proves nothing and is not counted. A knockout is ``errored`` only when nothing but such
uncounted errors (or an exception under fuzz or explore) is left.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from reference_impl import Generation

from ..fixtures.loading import Fixture
from ..judging.runner import reference_trace
from .knockout import (
    EQUIVALENT,
    EQUIVALENT_IN,
    NOT_RUN_AGAIN,
    Knockout,
    Reach,
    knockouts,
    member,
    reach_of,
    reached,
    spec_rules,
)
from .sensitivity import Explored, Kill, explore_kills, explore_trees, fuzz_kills, judge

SHORT = {"hw-truncation": "H", "leader-epoch": "L", "diverging-epoch": "D"}
"""One letter per generation, for the matrix cells."""

ENOUGH = 2
"""A knockout is pinned when at least this many fixture cases kill it in each generation
where its rule applies (issue 24)."""


@dataclass
class KnockoutVerdict:
    """What the suite did to one knockout."""

    knockout: Knockout
    kills: list[Kill] = field(default_factory=list)
    """Fixture cases that fail it by a difference."""
    searched: list[Kill] = field(default_factory=list)
    """Its kill by fuzz or explore (when asked for and no fixture killed it)."""
    errors: list[str] = field(default_factory=list)
    generation_of: dict[str, str] = field(default_factory=dict)
    """Fixture case id -> its generation."""
    reached: tuple[str, ...] = ()
    """The generations in which some fixture case runs the knockout's line on the reference
    (``Knockout.line``) and, at a forced ``if``, goes the other way (``Knockout.turn``):
    only there can a case kill it. A generation where the knockout is argued equivalent
    (``EQUIVALENT_IN``) is left out."""
    errored: list[Kill] = field(default_factory=list)
    """Fixture cases it errors on (raises or hangs in that case): detections too."""

    @property
    def equivalent_in(self) -> dict[str, str]:
        """Generation -> why no step sequence of it tells the knockout apart (``EQUIVALENT_IN``)."""
        return EQUIVALENT_IN.get(self.knockout.id, {})

    @property
    def detections(self) -> list[Kill]:
        """The fixture cases that detect it: those it fails and those it errors on."""
        return [*self.kills, *self.errored]

    @property
    def by_error(self) -> bool:
        """Killed, but only by cases it errors on (or a fuzz run where it raised)."""
        return (
            not self.kills
            and bool(self.errored or self.searched)
            and all(k.fixture.split(":")[2:3] == ["error"] for k in self.searched)
        )

    @property
    def status(self) -> str:
        if self.detections or self.searched:
            return "killed"
        if self.knockout.id in EQUIVALENT:
            return "equivalent"
        return "errored" if self.errors else "survived"

    def cases_in(self, generation: str) -> int:
        return sum(1 for k in self.detections if self.generation_of.get(k.fixture) == generation)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.knockout.id,
            "rule": self.knockout.rule,
            "operator": self.knockout.operator,
            "where": self.knockout.where,
            "status": self.status,
            "reached_in": list(self.reached),
            "killed_by": [k.fixture for k in self.kills],
            "errored_by": [k.fixture for k in self.errored],
            "searched": [k.to_dict() for k in self.searched],
            "errors": self.errors[:3],
            "equivalent": EQUIVALENT.get(self.knockout.id),
            "equivalent_in": self.equivalent_in,
        }


@dataclass
class RuleVerdict:
    """A rule's knockouts, and the generations where the fixtures reach one of them."""

    rule: str
    knockouts: list[KnockoutVerdict]

    @property
    def applies(self) -> tuple[str, ...]:
        found = {g for v in self.knockouts for g in v.reached}
        return tuple(g.value for g in Generation if g.value in found)

    @property
    def status(self) -> str:
        if not self.knockouts:
            return "no knockout"
        statuses = {v.status for v in self.knockouts}
        for worst in ("survived", "errored", "killed"):
            if worst in statuses:
                return worst
        return "equivalent"

    def weakest(self) -> tuple[int, str]:
        """The fewest fixture cases killing one of its knockouts (by a difference or an
        error; neither equivalent nor errored) in one generation whose fixture cases reach it, and that generation
        ('' when none is reached)."""
        out: tuple[int, str] | None = None
        for v in self.knockouts:
            if v.status in ("equivalent", "errored"):
                continue
            for generation in v.reached:
                here = (v.cases_in(generation), generation)
                out = here if out is None or here < out else out
        killable = [v for v in self.knockouts if v.status not in ("equivalent", "errored")]
        return out or (min((len(v.detections) for v in killable), default=ENOUGH), "")

    def killers(self) -> dict[str, set[str]]:
        """Fixture base id -> the generations of its cases that kill some knockout of the rule."""
        out: dict[str, set[str]] = {}
        for v in self.knockouts:
            for k in v.detections:
                base = k.fixture.split("/")[0]
                out.setdefault(base, set()).add(v.generation_of.get(k.fixture, ""))
        return out

    def to_dict(self) -> dict[str, Any]:
        cases, generation = self.weakest()
        return {
            "rule": self.rule,
            "status": self.status,
            "applies_in": list(self.applies),
            "weakest_cases": cases,
            "weakest_generation": generation,
            "knockouts": [v.to_dict() for v in self.knockouts],
        }


@dataclass
class Sweep:
    """Every rule's knockouts against one suite."""

    rules: list[RuleVerdict]
    fixtures: list[str]
    seconds: float
    mutants: int
    """Distinct mutants run (knockouts that are the same mutant run once)."""
    fuzz_budget: int = 0
    explore_depth: int = 0

    @property
    def verdicts(self) -> list[KnockoutVerdict]:
        return [v for r in self.rules for v in r.knockouts]

    def count(self, status: str) -> int:
        return sum(1 for v in self.verdicts if v.status == status)

    def weak(self) -> list[RuleVerdict]:
        """Rules with a non-equivalent knockout killed by fewer than ``ENOUGH`` cases in a
        generation where the rule applies."""
        return [r for r in self.rules if r.knockouts and r.status != "equivalent" and r.weakest()[0] < ENOUGH]

    @property
    def ok(self) -> bool:
        """No knockout survives (one killed by error counts as killed; one left ``errored``,
        with nothing but uncounted errors, is listed, not a failure)."""
        return not any(v.status == "survived" for v in self.verdicts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rules": len(self.rules),
            "knockouts": len(self.verdicts),
            "mutants": self.mutants,
            "killed": self.count("killed"),
            "killed_by_error": sum(1 for v in self.verdicts if v.status == "killed" and v.by_error),
            "survived": self.count("survived"),
            "equivalent": self.count("equivalent"),
            "errored": self.count("errored"),
            "weak_rules": [r.rule for r in self.weak()],
            "fixture_cases": len(self.fixtures),
            "fuzz_budget": self.fuzz_budget,
            "explore_depth": self.explore_depth,
            "seconds": round(self.seconds, 3),
            "by_rule": [r.to_dict() for r in self.rules],
        }


def _reached(knockout: Knockout, reaches: Sequence[tuple[str, Reach]]) -> tuple[str, ...]:
    found = {generation for generation, reach in reaches if reach_of(knockout, reach)}
    same = EQUIVALENT_IN.get(knockout.id, {})
    return tuple(g.value for g in Generation if g.value in found and g.value not in same)


def sweep(
    fixtures: Sequence[Fixture],
    rules: Sequence[str] | None = None,
    progress: Callable[[int, int, Knockout], None] | None = None,
    level: str = "exact",
    fuzz_budget: int = 0,
    explore_depth: int = 0,
    generations: Sequence[Generation] = tuple(Generation),
) -> Sweep:
    """Run every knockout of ``rules`` (default: all the spec's) on ``fixtures``; fuzz
    (``fuzz_budget`` runs per generation) and explore (``explore_depth``) the ones no
    fixture kills."""
    started = time.perf_counter()
    wanted = list(rules) if rules is not None else list(spec_rules())
    traces = {f.id: reference_trace(f) for f in fixtures}
    generation_of = {f.id: f.generation.value for f in fixtures}
    reaches = [(f.generation.value, reached(partial(reference_trace, f))) for f in fixtures]
    trees: list[Explored] = explore_trees(generations, explore_depth) if explore_depth else []
    every = knockouts(wanted)
    done: dict[str, KnockoutVerdict] = {}
    out: dict[str, list[KnockoutVerdict]] = {rule: [] for rule in wanted}
    for i, knockout in enumerate(every):
        if progress is not None:
            progress(i + 1, len(every), knockout)
        first = done.get(knockout.key)
        if first is None:
            entry = member(knockout, i)
            judged = judge(entry, fixtures, traces, level)
            errored = [k for k in judged.errored if not k.reason.endswith(NOT_RUN_AGAIN)]
            first = KnockoutVerdict(knockout, judged.kills, [], judged.errors, generation_of, errored=errored)
            first.reached = _reached(knockout, reaches)
            if not first.detections and knockout.id not in EQUIVALENT:
                try:
                    if trees:
                        first.searched += explore_kills(entry, trees)
                    if not first.searched and fuzz_budget:
                        first.searched += fuzz_kills(entry, fuzz_budget, generations, level)
                except Exception as exc:  # the knockout raised under fuzz or explore: errored, not killed
                    first.errors.append(f"fuzz/explore: {type(exc).__name__}: {exc}")
            done[knockout.key] = first
        out[knockout.rule].append(
            KnockoutVerdict(
                knockout,
                first.kills,
                first.searched,
                first.errors,
                generation_of,
                _reached(knockout, reaches),
                first.errored,
            )
        )
    verdicts = [RuleVerdict(rule, out[rule]) for rule in wanted]
    return Sweep(
        verdicts, [f.id for f in fixtures], time.perf_counter() - started, len(done), fuzz_budget, explore_depth
    )
