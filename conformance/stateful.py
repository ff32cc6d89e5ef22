"""Random testing of an implementation: the reference and the implementation, step for step.

A run draws a partition config, then repeatedly one of the steps the reference says are
enabled (``enabled_steps``: preconditions are never re-coded here), weighted by kind and
with its free parameters drawn (``distribution.py``: the distribution, shared with the
property tests), in the form the implementation can perform (a ``fetch`` becomes a
``fetch_round`` for an implementation with whole rounds only, and an answer it cannot be
sent is delivered on the reference side as the round's end). Each step is applied to both
and the implementation is judged at the chosen level (``levels.py``):

- ``exact``: every reported field equals the reference's after every step;
- ``settled``: outcome fields at quiescent points, against every reference state the
  visible steps reach with a few internal steps (``settle.py``);
- ``safety``: only the invariants on the implementation's own observations (``safety.py``),
  which every level also checks.

Runs are drawn from a seeded ``random.Random`` (the same seed, the same runs), which keeps
drawing cheap: the reference and the implementation take nearly all the time. A failing
run is then shrunk by replaying smaller versions of it (``shrink``): chunks of steps
removed, steps simplified (optional fields to their defaults, ticks of 1 ms), the config
simplified, as long as the same kind of failure (level and field, or safety property)
comes back. Each distinct kind of failure is kept with its own shrunk witness fixture, and
the runs count what they exercised (steps per kind, rules fired by the reference).
"""

from __future__ import annotations

import fnmatch
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from reference_impl import (
    Config,
    Generation,
    State,
    Step,
    StepRejected,
    apply,
    initial_state,
    observe,
)
from reference_impl.steps import DeliverEpoch, DeliverFetch, EpochRequest, EpochRound, Fetch, FetchRound

from .adapter import Adapter, AdapterError, Description
from .compare import MISSING, all_divergences
from .conventions import Conventions, adjust_expected, normalise, unsupported_step_field
from .distribution import WEIGHTS, RandomChooser, draw_config, draw_steps, simpler
from .judge import SPLIT_KINDS
from .levels import settled_part
from .runner import comparable
from .safety import SafetyMonitor
from .settle import Frontier
from .wire import wire_step

SHRINK_REPLAYS = 600
"""At most this many replays to shrink one failure (each at most the failing run's length)."""


@dataclass
class Trace:
    """The run so far, kept for the witness fixture: the steps as the reference took them
    (answers an implementation received by itself included, as ``deliver_*`` steps)."""

    config: Config | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    observations: list[dict[str, Any]] = field(default_factory=list)
    level: str = "exact"
    sent: list[Step] = field(default_factory=list)
    """The steps sent to the implementation (what shrinking removes and simplifies)."""


class Disagreement(AssertionError):
    """The implementation fails the level; ``trace`` holds the run, ``reason`` what failed."""

    def __init__(self, message: str, trace: Trace, signature: str = "") -> None:
        super().__init__(message)
        self.trace = trace
        self.reason = message
        self.signature = signature


@dataclass
class Exercised:
    """What the runs did: steps per kind and rules the reference fired."""

    steps: Counter[str] = field(default_factory=Counter)
    rules: Counter[str] = field(default_factory=Counter)
    runs: int = 0
    shrink_runs: int = 0
    seconds: float = 0.0

    @property
    def total_steps(self) -> int:
        return sum(self.steps.values())


@dataclass
class FuzzReport:
    failures: list[Disagreement]
    exercised: Exercised
    seed: int = 0


def proposal(step: Step, kinds: frozenset[str]) -> Step | None:
    """``step`` in a form the implementation performs, or None if it cannot."""
    if step.kind in kinds:
        return step
    if isinstance(step, Fetch) and "fetch_round" in kinds:
        return FetchRound(step.replica, step.max_records)
    if isinstance(step, EpochRequest) and "epoch_round" in kinds:
        return EpochRound(step.replica)
    return None


def _signature(level: str, path: str) -> str:
    """A failure's kind: the level and the field with replica ids wildcarded."""
    parts = path.split(".")
    if len(parts) > 1 and parts[0] in ("replicas", "producer", "in_flight"):
        parts[1] = "*"
    if len(parts) > 3 and parts[2] == "remote_leo":
        parts[3] = "*"
    return f"{level}:{'.'.join(parts)}"


class Judge:
    """One implementation judged against the reference, one run at a time (``start``, then
    ``take`` per step): raises ``Disagreement`` at the first failure of the level.

    One adapter serves every run (``reset`` starts each afresh), so a stdio implementation
    is not restarted per run unless it fails. ``ignore``: known differences, field path or
    property globs -> reason.
    """

    def __init__(
        self,
        adapter: Adapter,
        generation: Generation,
        level: str = "exact",
        ignore: Mapping[str, str] | None = None,
        exercised: Exercised | None = None,
    ) -> None:
        self.adapter = adapter
        self.generation = generation
        self.level = level
        self.ignored = dict(ignore or {})
        self.stats = exercised if exercised is not None else Exercised()
        self.description: Description = adapter.describe()
        self.kinds = frozenset(self.description.steps)
        self.lacking = frozenset(k for k in SPLIT_KINDS if k not in self.kinds)
        # the expectation needs adjusting only for an implementation with its own conventions
        # or role-dependent fields; otherwise an observation equal to the reference's passes
        self.plain = Conventions.of(self.description) == Conventions() and not self.description.role_fields
        self.state: State | None = None
        self.trace = Trace(level=level)
        self.monitor: SafetyMonitor | None = None
        self.frontier: Frontier | None = None
        self.produced = 0

    def lower(self, step: Step) -> Step | None:
        return proposal(step, self.kinds)

    def honours(self, step: Step) -> bool:
        return unsupported_step_field(step, self.description) is None

    def known(self, path: str) -> bool:
        return any(fnmatch.fnmatchcase(path, pattern) for pattern in self.ignored)

    def fail(self, signature: str, message: str) -> None:
        raise Disagreement(message, self.trace, signature)

    def start(self, config: Config) -> None:
        self.state = initial_state(config)
        self.trace = Trace(config=config, level=self.level)
        self.monitor = SafetyMonitor(config.replicas, self.generation.value)
        self.frontier = Frontier(self.state, self.lacking) if self.level == "settled" else None
        self.produced = 0
        try:
            self.adapter.reset(config.to_dict())
        except AdapterError as exc:
            self.fail("error:reset", f"reset failed: {exc.message}")

    def _reference(self, step: Step) -> None:
        assert self.state is not None
        self.state = apply(self.state, step)
        self.stats.steps[step.kind] += 1
        self.stats.rules.update(self.state.fired)
        self.trace.steps.append(wire_step(step, self.produced))
        self.trace.observations.append(observe(self.state))

    def take(self, chosen: Step) -> bool:
        """Apply ``chosen`` to both and judge; False if the reference rejects it (the
        implementation is then not sent it)."""
        assert self.state is not None and self.monitor is not None
        do = wire_step(chosen, self.produced)
        number = len(self.trace.steps) + 1
        try:
            self._reference(chosen)
        except StepRejected:  # a drawn parameter the reference does not allow here: not sent
            return False
        self.trace.sent.append(chosen)
        fired = " ".join(self.state.fired)
        after_step = self.state
        internal: list[Step] = []
        # answers the implementation receives by itself (it has no step to be sent them)
        for _ in range(4 if self.lacking else 0):
            pending = [DeliverFetch(m.dst) for m in self.state.fetch_responses if "deliver_fetch" in self.lacking]
            pending += [DeliverEpoch(m.dst) for m in self.state.epoch_responses if "deliver_epoch" in self.lacking]
            if not pending:
                break
            try:
                self._reference(pending[0])
            except StepRejected:
                break
            internal.append(pending[0])
        if do["kind"] == "produce":
            self.produced += 1
        try:
            answer = self.adapter.step(do)
        except AdapterError as exc:
            self.fail("error:step", f"step {number} {do}: the implementation failed: {exc.message}")
        if answer.rejected is not None:
            if self.level == "safety":
                return True
            self.fail(
                f"{self.level}:(step)",
                f"step {number} {do}: rejected by the implementation ({answer.rejected}), "
                f"the reference performs it [rules: {fired}]",
            )
        description = self.description
        observed = normalise(answer.observation or {}, description, self.state.config.replicas)
        for finding in self.monitor.observe(do, observed):
            if not self.known(finding.property):
                self.fail(
                    f"safety:{finding.property}",
                    f"step {number} {do}: safety property {finding.property} violated: {finding.detail} "
                    f"[rules fired by the reference: {fired}]",
                )
        if self.level == "safety":
            return True
        reference = self.trace.observations[-1]
        if self.level == "exact" and self.plain and observed == reference:
            return True  # the common case, without building a comparison
        roles = {n: r["role"] for n, r in reference["replicas"].items()}
        base = reference if self.plain else adjust_expected(reference, description, observed, roles)
        expected = comparable(base, description)
        if self.level == "settled":
            assert self.frontier is not None
            self.frontier.step(chosen, after_step)
            for extra in internal:
                self.frontier.step(extra, None, internal=True)
            if internal and self.state not in self.frontier.states:
                self.frontier.states.insert(0, self.state)
            flight = reference["in_flight"]
            if any(flight[k] for k in ("fetch_responses", "epoch_responses", "leader_and_isr")):
                return True
            expected = settled_part(expected)
            if self.frontier.match(expected, observed):
                return True
        for d in all_divergences(expected, observed):
            if self.known(d.path):
                continue
            actual = "(not reported)" if d.actual is MISSING else d.actual
            self.fail(
                _signature(self.level, d.path),
                f"step {number} {do}: {d.path}: reference {d.expected!r}, implementation {actual!r} "
                f"[level {self.level}; rules fired by the reference: {fired}]",
            )
        return True

    def replay(self, config: Config, steps: list[Step]) -> Disagreement | None:
        """Run ``steps`` from a reset (skipping those the reference rejects); the failure, if any."""
        self.stats.shrink_runs += 1
        try:
            self.start(config)
            for step in steps:
                self.take(step)
        except Disagreement as exc:
            return exc
        return None


def random_run(
    judge: Judge, rng: random.Random, steps: int, weights: Mapping[str, int] = WEIGHTS
) -> Disagreement | None:
    """One random run of at most ``steps`` steps; its failure, if any."""
    chooser = RandomChooser(rng)
    config = draw_config(chooser, judge.generation)
    judge.stats.runs += 1
    try:
        judge.start(config)
        taken = 0
        while taken < steps:
            assert judge.state is not None
            batch = draw_steps(chooser, judge.state, weights, judge.lower, judge.honours)
            if not batch:
                break
            for step in batch[: steps - taken]:
                judge.take(step)
                taken += 1
    except Disagreement as exc:
        return exc
    return None


def shrink(judge: Judge, failure: Disagreement, budget: int = SHRINK_REPLAYS) -> Disagreement:
    """A smaller run failing the same way: steps removed in chunks (halves down to single
    steps), each step simplified (``distribution.simpler``), then the config simplified,
    until nothing more helps or ``budget`` replays are spent."""
    best = failure
    config = failure.trace.config
    assert config is not None
    spent = 0

    def attempt(cfg: Config, steps: list[Step]) -> bool:
        nonlocal best, spent
        if spent >= budget:
            return False
        spent += 1
        found = judge.replay(cfg, steps)
        if found is None or found.signature != failure.signature:
            return False
        if (len(found.trace.sent), len(found.trace.steps)) > (len(best.trace.sent), len(best.trace.steps)):
            return False
        if found.trace.sent == best.trace.sent and cfg == config:
            return False
        best = found
        return True

    improved = True
    while improved and spent < budget:
        improved = False
        # remove chunks, largest first, from the end towards the start
        size = max(1, len(best.trace.sent) // 2)
        while size >= 1 and spent < budget:
            start = len(best.trace.sent) - size
            while start >= 0 and spent < budget:
                steps = best.trace.sent
                if attempt(config, steps[:start] + steps[start + size :]):
                    improved = True
                    start = min(start, len(best.trace.sent)) - size
                else:
                    start -= 1
            size //= 2
        # simplify each step
        i = 0
        while i < len(best.trace.sent) and spent < budget:
            for simple in simpler(best.trace.sent[i]):
                steps = best.trace.sent
                if attempt(config, [*steps[:i], simple, *steps[i + 1 :]]):
                    improved = True
                    break
            i += 1
        # simplify the config
        for simple_config in _simpler_configs(config, best.trace.sent):
            if attempt(simple_config, best.trace.sent):
                config = simple_config
                improved = True
    return best


def _simpler_configs(config: Config, steps: list[Step]) -> list[Config]:
    named = {getattr(s, a) for s in steps for a in ("replica", "leader", "to") if getattr(s, a, None)}
    named |= {n for s in steps for n in (getattr(s, "notify", None) or ())}
    out = []
    if len(config.replicas) > 2 and config.replicas[-1] not in named and config.replicas[-1] != config.leader_at_start:
        fewer = config.replicas[:-1]
        out.append(replace(config, replicas=fewer, min_insync_replicas=min(config.min_insync_replicas, len(fewer))))
    defaults = Config()
    for name in (
        "initial_leader",
        "min_insync_replicas",
        "unclean_leader_election",
        "replica_high_watermark_checkpoint_interval_ms",
        "request_timeout_ms",
        "replica_fetch_wait_max_ms",
        "replica_lag_time_max_ms",
    ):
        if getattr(config, name) != getattr(defaults, name):
            out.append(replace(config, **{name: getattr(defaults, name)}))
    return out


def fuzz_all(
    adapter: Adapter,
    generation: Generation,
    examples: int = 100,
    steps: int = 30,
    derandomize: bool = False,
    level: str = "exact",
    ignore: dict[str, str] | None = None,
    *,
    seed: int | None = None,
    weights: Mapping[str, int] = WEIGHTS,
    stop_at_first: bool = False,
    on_run: Callable[[int], None] | None = None,
) -> FuzzReport:
    """``examples`` random runs of at most ``steps`` steps; every distinct failure, shrunk.

    ``seed`` makes the runs reproducible (``derandomize`` is seed 0); without either a
    fresh seed is drawn and reported in ``FuzzReport.seed``. ``stop_at_first``: stop after
    the first failure (shrunk), as ``kconform sensitivity`` needs only one kill."""
    if seed is None:
        seed = 0 if derandomize else random.SystemRandom().randrange(2**32)
    stats = Exercised()
    started = time.perf_counter()
    judge = Judge(adapter, generation, level, ignore, stats)
    rng = random.Random(seed)
    found: dict[str, Disagreement] = {}
    try:
        for n in range(examples):
            failure = random_run(judge, rng, steps, weights)
            if on_run is not None:
                on_run(n + 1)
            if failure is None or failure.signature in found:
                continue
            again = judge.replay(failure.trace.config, list(failure.trace.sent))  # type: ignore[arg-type]
            if again is None or again.signature != failure.signature:
                raise AdapterError(
                    "the implementation is not deterministic on replay: a failing run "
                    f"({failure.signature}) did not fail the same way when replayed"
                )
            found[failure.signature] = shrink(judge, failure)
            if stop_at_first:
                break
    finally:
        adapter.close()
    stats.seconds = time.perf_counter() - started
    return FuzzReport(list(found.values()), stats, seed)


def fuzz(
    adapter: Adapter,
    generation: Generation,
    examples: int = 100,
    steps: int = 30,
    derandomize: bool = False,
    level: str = "exact",
    *,
    seed: int | None = None,
) -> Trace | None:
    """The first failure's shrunk run, or None (``fuzz_all`` gives every one)."""
    report = fuzz_all(adapter, generation, examples, steps, derandomize, level, seed=seed, stop_at_first=True)
    return report.failures[0].trace if report.failures else None


def witness_fixture(trace: Trace, fixture_id: str = "fuzz-witness", reason: str = "") -> str:
    """The failing run as a fixture: every step, the last one expecting the reference's
    whole observation (the runner compares what the implementation exposes; a safety
    failure replays with ``kconform run --level safety``)."""
    assert trace.config is not None
    steps: list[dict[str, Any]] = [{"do": {k: v for k, v in do.items() if v is not None}} for do in trace.steps]
    if steps and trace.level != "safety":
        steps[-1]["expect"] = trace.observations[-1]
    config = {k: v for k, v in trace.config.to_dict().items() if v is not None}
    generation = config.pop("generation")
    doc = {
        "id": fixture_id,
        "title": "A run where the implementation failed kconform fuzz",
        "source": "kconform fuzz",
        "description": reason or "found by kconform fuzz",
        "tags": ["fuzz"],
        "config": {**config, "generation": generation},
        "steps": steps,
    }
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120)
