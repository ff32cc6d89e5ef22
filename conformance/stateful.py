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
    check,
    initial_state,
    observe,
)
from reference_impl.steps import DeliverEpoch, DeliverFetch, Elect, EpochRequest, EpochRound, Fetch, FetchRound, Tick

from .adapter import Adapter, AdapterError, Description
from .compare import MISSING, all_divergences
from .conventions import Conventions, adjust_expected, normalise, unsupported_step_field
from .distribution import NAMES, WEIGHTS, RandomChooser, draw_config, draw_steps, simpler, swarm
from .explore import EXPECTED_VIOLATIONS, alphabet, state_key
from .judge import SPLIT_KINDS
from .levels import settled_part
from .runner import comparable
from .safety import SafetyMonitor
from .settle import Frontier
from .wire import wire_step

SHRINK_REPLAYS = 600
"""At most this many replays to shrink one failing run (each at most the run's length)."""
WITNESSES = 3
"""Failing runs shrunk per kind of failure; the shortest witness is kept."""
INVARIANT_WITNESSES = 10
"""Runs shrunk per invariant the reference breaks (cheap: the reference alone is replayed)."""


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
    rejected: dict[int, str] = field(default_factory=dict)
    """Index in ``steps`` -> the rule of a step the reference refuses (the implementation must too)."""
    taken: list[Step] = field(default_factory=list)
    """The steps the reference took (the sent ones and answers delivered by themselves)."""


class Disagreement(AssertionError):
    """The implementation fails the level; ``trace`` holds the run, ``reason`` what failed."""

    def __init__(self, message: str, trace: Trace, signature: str = "", rules: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.trace = trace
        self.reason = message
        self.signature = signature
        self.rules = rules
        """The rules the reference fired at the failing step."""


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
    findings: list[InvariantFinding] = field(default_factory=list)
    """The reference's own invariant violations (each invariant once, shrunk)."""


def proposal(step: Step, kinds: frozenset[str]) -> Step | None:
    """``step`` in a form the implementation performs, or None if it cannot."""
    if step.kind in kinds:
        return step
    if isinstance(step, Fetch) and "fetch_round" in kinds:
        return FetchRound(step.replica, step.max_records, step.max_wait_ms)
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
        self.conventional = Conventions.of(self.description) == Conventions()
        self.plain = self.conventional and not self.description.role_fields
        self.deferred: list[tuple[dict[str, Any], dict[str, Any]]] = []
        """Steps whose observation equalled the reference's, not yet read by the safety monitor."""
        self.state: State | None = None
        self.trace = Trace(level=level)
        self.monitor: SafetyMonitor | None = None
        self.frontier: Frontier | None = None
        self.produced = 0
        self.invariants = True
        self.broken: dict[str, int] = {}
        """Invariant -> the number of the step after which the reference first broke it, this run."""

    def lower(self, step: Step) -> Step | None:
        return proposal(step, self.kinds)

    @property
    def lowering(self) -> Callable[[Step], Step | None] | None:
        """``lower``, or None for an implementation that performs every step kind as it is."""
        from reference_impl import STEP_TYPES

        return None if self.kinds >= set(STEP_TYPES) else self.lower

    def honours(self, step: Step) -> bool:
        return unsupported_step_field(step, self.description) is None

    def known(self, path: str) -> bool:
        return any(fnmatch.fnmatchcase(path, pattern) for pattern in self.ignored)

    def fail(self, signature: str, message: str, rules: tuple[str, ...] | None = None) -> None:
        if rules is None:
            rules = self.state.fired if self.state is not None else ()
        raise Disagreement(message, self.trace, signature, rules)

    def start(self, config: Config) -> None:
        self.state = initial_state(config)
        self.trace = Trace(config=config, level=self.level)
        self.monitor = SafetyMonitor(config.replicas, self.generation.value)
        self.deferred = []
        self.frontier = Frontier(self.state, self.lacking) if self.level == "settled" else None
        self.produced = 0
        self.broken = {}
        try:
            self.adapter.reset(config.to_dict())
        except AdapterError as exc:
            self.fail("error:reset", f"reset failed: {exc.message}")

    def _reference(self, step: Step) -> None:
        assert self.state is not None
        before = self.state
        self.state = apply(before, step)
        if self.invariants:
            for violation in check(self.state, before):
                self.broken.setdefault(violation.invariant, len(self.trace.taken) + 1)
        self.trace.taken.append(step)
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
        except StepRejected as exc:
            return self._refused(chosen, do, number, exc)
        self.trace.sent.append(chosen)
        fired = " ".join(self.state.fired)
        after_step = self.state
        internal: list[Step] = []
        # answers the implementation receives by itself (it has no step to be sent them)
        for _ in range(4 if self.lacking else 0):
            pending: list[Step] = [
                DeliverFetch(m.dst) for m in self.state.fetch_responses if "deliver_fetch" in self.lacking
            ]
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
            if self.level == "safety" or self._settles(chosen, performed=False):
                return True
            self.fail(
                f"{self.level}:(step)",
                f"step {number} {do}: rejected by the implementation ({answer.rejected}), "
                f"the reference performs it{self._unreached} [rules: {fired}]",
            )
        description = self.description
        observed = answer.observation or {}
        if not self.conventional:
            observed = normalise(observed, description, self.state.config.replicas)
        reference = self.trace.observations[-1]
        if self.level == "exact" and self.plain and observed == reference:
            # the common case: the reference's own observation, which meets every safety
            # property (tests/test_safety.py); the monitor reads it only if a later step differs
            self.deferred.append((do, observed))
            return True
        for earlier, seen in self.deferred:
            self.monitor.observe(earlier, seen)
        self.deferred.clear()
        for finding in self.monitor.observe(do, observed):
            if not self.known(finding.property):
                self.fail(
                    f"safety:{finding.property}",
                    f"step {number} {do}: safety property {finding.property} violated: {finding.detail} "
                    f"[rules fired by the reference: {fired}]",
                )
        if self.level == "safety":
            return True
        roles = {n: r["role"] for n, r in reference["replicas"].items()}
        base = reference if self.plain else adjust_expected(reference, description, observed, roles)
        expected = comparable(base, description)
        if self.level == "settled":
            assert self.frontier is not None
            if not self.frontier.detached:
                self.frontier.step(chosen, after_step)
            elif not self.frontier.decide(chosen, performed=True):
                self.fail(
                    f"{self.level}:(step)",
                    f"step {number} {do}: performed by the implementation and the reference, but refused by every "
                    "reference state the earlier steps can reach (the run had left the reference's own path)",
                )
            for extra in internal:
                self.frontier.step(extra, None, internal=True)
            if internal:
                self.frontier.include(self.state)
            flight = reference["in_flight"]
            if any(flight[k] for k in ("fetch_responses", "epoch_responses", "leader_and_isr")):
                return True
            expected = settled_part(expected)
            if self.frontier.match(expected, observed):
                return True
        misses = self.frontier.nearest(expected, observed) if self.frontier is not None else []
        for d in misses or all_divergences(expected, observed):
            if self.known(d.path):
                continue
            actual = "(not reported)" if d.actual is MISSING else d.actual
            self.fail(
                _signature(self.level, d.path),
                f"step {number} {do}: {d.path}: reference {d.expected!r}, implementation {actual!r} "
                f"[level {self.level}; rules fired by the reference: {fired}]",
            )
        return True

    def _refused(self, chosen: Step, do: dict[str, Any], number: int, exc: StepRejected) -> bool:
        """A step the reference refuses: the implementation must refuse it too (not judged,
        and not sent, at level safety)."""
        if self.level == "safety":
            return False
        self.trace.sent.append(chosen)
        self.trace.rejected[len(self.trace.steps)] = exc.rule
        self.trace.steps.append(do)
        self.trace.observations.append(self.trace.observations[-1] if self.trace.observations else {})
        self.stats.steps["refused"] += 1
        try:
            answer = self.adapter.step(do)
        except AdapterError as exc2:
            self.fail("error:step", f"step {number} {do}: the implementation failed: {exc2.message}")
        if answer.rejected is None:
            if not self._settles(chosen, performed=True):
                self.fail(
                    f"{self.level}:(refused)",
                    f"step {number} {do}: the reference refuses it ({exc.rule}: {exc.reason}), "
                    f"the implementation performs it{self._unreached}",
                    (exc.rule,),
                )
        elif self.frontier is not None and not self.frontier.detached:
            self.frontier.refuse(chosen)  # as the reference's own path does: no verdict to give
        elif self.frontier is not None and not self.frontier.decide(chosen, performed=False):
            self.fail(
                f"{self.level}:(step)",
                f"step {number} {do}: refused by the implementation and the reference, but performed by every "
                "reference state the earlier steps can reach (the run had left the reference's own path)",
                (exc.rule,),
            )
        return True

    @property
    def _unreached(self) -> str:
        return " (and so does every reference state the visible steps can reach)" if self.frontier else ""

    def _settles(self, step: Step, performed: bool) -> bool:
        """At level settled, where the implementation ``performed`` (or refused) ``step``
        unlike the reference's own path (or after the run left that path): whether some
        reference state the visible steps can reach does the same (``Frontier.decide``; the
        run then goes on from those states)."""
        return self.frontier is not None and self.frontier.decide(step, performed)

    def replay(self, config: Config, steps: list[Step]) -> Disagreement | None:
        """Run ``steps`` from a reset (skipping those the reference rejects); the failure, if any."""
        self.stats.shrink_runs += 1
        try:
            self.start(config)
            for step in steps:
                self.take(step)
        except Disagreement as exc:
            return exc
        except Exception:  # an in-process implementation crashing on a smaller run: not the same failure
            return None
        return None


def random_run(
    judge: Judge, rng: random.Random, steps: int, weights: Mapping[str, int] = WEIGHTS
) -> Disagreement | None:
    """One random run of at most ``steps`` steps; its failure, if any."""
    chooser = RandomChooser(rng)
    config = draw_config(chooser, judge.generation)
    weights = swarm(chooser, weights)
    judge.stats.runs += 1
    lowering = judge.lowering
    honours = judge.honours if judge.description.step_fields else None
    refused = judge.level != "safety"
    try:
        judge.start(config)
        taken = 0
        while taken < steps:
            assert judge.state is not None
            batch = draw_steps(chooser, judge.state, weights, lowering, honours, refused)
            if not batch:
                break
            for step in batch[: steps - taken]:
                judge.take(step)
                taken += 1
    except Disagreement as exc:
        return exc
    return None


Attempt = Callable[[Config, list[Step]], list[Step] | None]
"""Replays a run; the steps taken up to the failure when it fails the same way, else None."""


def shrink_run(
    config: Config, steps: list[Step], fails: Attempt, budget: int = SHRINK_REPLAYS
) -> tuple[Config, list[Step]]:
    """A smaller run that ``fails`` the same way: steps removed in chunks (halves down to
    single steps, from the end), then in pairs (two steps that only go together), adjacent
    ticks merged into one, each step simplified (``distribution.simpler``), then the config
    simplified (``_simpler_runs``), until nothing more helps or ``budget`` replays are spent."""
    best = list(steps)
    spent = 0

    def attempt(cfg: Config, candidate: list[Step]) -> bool:
        nonlocal best, spent, config
        if spent >= budget or (cfg == config and candidate == best):
            return False
        spent += 1
        taken = fails(cfg, candidate)
        if taken is None or len(taken) > len(best) or (taken == best and cfg == config):
            return False
        best, config = taken, cfg
        return True

    improved = True
    while improved and spent < budget:
        improved = False
        size = max(1, len(best) // 2)
        while size >= 1 and spent < budget:
            start = len(best) - size
            while start >= 0 and spent < budget:
                if attempt(config, best[:start] + best[start + size :]):
                    improved = True
                    start = min(start, len(best)) - size
                else:
                    start -= 1
            size //= 2
        improved |= _remove_pairs(config, best, attempt)
        i = 0
        while i < len(best) - 1 and spent < budget:
            first, second = best[i], best[i + 1]
            if isinstance(first, Tick) and isinstance(second, Tick):
                improved |= attempt(config, [*best[:i], Tick(first.ms + second.ms), *best[i + 2 :]])
            i += 1
        i = 0
        while i < len(best) and spent < budget:
            for simple in simpler(best[i]):
                if attempt(config, [*best[:i], simple, *best[i + 1 :]]):
                    improved = True
                    break
            i += 1
        for simple_config, simple_steps in _simpler_runs(config, best):
            improved |= attempt(simple_config, simple_steps)
    return config, best


def _remove_pairs(config: Config, best: list[Step], attempt: Callable[[Config, list[Step]], bool]) -> bool:
    """Two steps removed at once, any two, the later ones first: a request and its answer,
    a crash and its restart, which single removals cannot take out one at a time."""
    for j in range(len(best) - 1, 0, -1):
        for i in range(j - 1, -1, -1):
            if attempt(config, [s for k, s in enumerate(best) if k not in (i, j)]):
                return True
    return False


def shrink(judge: Judge, failure: Disagreement, budget: int = SHRINK_REPLAYS) -> Disagreement:
    """``failure`` shrunk (``shrink_run``): the smallest run found failing with its signature."""
    assert failure.trace.config is not None

    def fails(cfg: Config, steps: list[Step]) -> list[Step] | None:
        found = judge.replay(cfg, steps)
        return list(found.trace.sent) if found is not None and found.signature == failure.signature else None

    config, steps = shrink_run(failure.trace.config, list(failure.trace.sent), fails, budget)
    final = judge.replay(config, steps)
    return final if final is not None and final.signature == failure.signature else failure


@dataclass(frozen=True)
class InvariantFinding:
    """The reference broke one of the spec's invariants in a random run (shrunk): expected
    under ``hw-truncation`` for StrongIsr and AckedNotLost (KIP-101's divergence and data
    loss), a spec bug anywhere else."""

    invariant: str
    detail: str
    config: Config
    path: tuple[Step, ...]
    expected: bool
    seconds: float
    """Since the fuzzing started, until the shrunk witness was ready (wall clock)."""
    cpu_seconds: float = 0.0
    """The same in CPU time of this process (what a shared machine does not inflate)."""


def reference_breaks(invariant: str) -> Attempt:
    """An ``Attempt`` for shrinking: the reference alone, checking ``invariant`` after every step."""

    def fails(config: Config, steps: list[Step]) -> list[Step] | None:
        state = initial_state(config)
        taken: list[Step] = []
        for step in steps:
            try:
                after = apply(state, step)
            except StepRejected:
                continue
            taken.append(step)
            if any(v.invariant == invariant for v in check(after, state)):
                return taken
            state = after
        return None

    return fails


def _invariant_finding(
    invariant: str, config: Config, steps: list[Step], started: float, cpu_started: float, search: bool = True
) -> InvariantFinding:
    config, path = shrink_run(config, steps, reference_breaks(invariant))
    while search:
        shorter = shorter_ending(config, path, invariant)
        if shorter is None:
            break
        config, path = shrink_run(*shorter, reference_breaks(invariant))
    state = initial_state(config)
    detail = ""
    for step in path:
        before, state = state, apply(state, step)
        detail = next((v.detail for v in check(state, before) if v.invariant == invariant), detail)
    expected = invariant in EXPECTED_VIOLATIONS.get(config.generation, frozenset())
    return InvariantFinding(
        invariant,
        detail,
        config,
        tuple(path),
        expected,
        time.perf_counter() - started,
        time.process_time() - cpu_started,
    )


TAIL_DEPTH = 3
"""``shorter_ending`` searches every ending of at most this many steps."""


def shorter_ending(config: Config, path: list[Step], invariant: str) -> tuple[Config, list[Step]] | None:
    """A shorter run breaking ``invariant``: the run (or a simpler config's version of it,
    ``_simpler_runs``) cut a few steps before its end, then a breadth-first search of every
    ending of up to ``TAIL_DEPTH`` enabled steps. Removing steps cannot turn a 3-replica
    witness into a 2-replica one that needs other steps (KIP-101's data loss takes two
    elections with three replicas, a crash and a restart with two); this can."""
    candidates = [c for c in _simpler_runs(config, path) if len(c[0].replicas) < len(config.replicas)]
    for cfg, steps in [*candidates, (config, path)]:
        states, taken = [initial_state(cfg)], []
        for step in steps:
            try:
                states.append(apply(states[-1], step))
            except StepRejected:
                continue
            taken.append(step)
        for cut in range(len(taken), max(-1, len(taken) - TAIL_DEPTH), -1):
            depth = min(TAIL_DEPTH, len(path) - 1 - cut)
            ending = _breaking_ending(states[cut], invariant, depth) if depth > 0 else None
            if ending is not None:
                return cfg, taken[:cut] + ending
    return None


def _breaking_ending(start: State, invariant: str, depth: int) -> list[Step] | None:
    """A shortest sequence of at most ``depth`` enabled steps from ``start`` after which
    ``invariant`` breaks (at most one more produce), or None."""
    records = len(start.produces) + 1
    layer: list[tuple[State, list[Step]]] = [(start, [])]
    seen = {state_key(start)}
    for level in range(depth):
        following = []
        for state, steps in layer:
            for step in alphabet(state, records):
                after = apply(state, step)
                if any(v.invariant == invariant for v in check(after, state)):
                    return [*steps, step]
                key = state_key(after)
                if level + 1 < depth and key not in seen:
                    seen.add(key)
                    following.append((after, [*steps, step]))
        layer = following
    return None


def _simpler_runs(config: Config, steps: list[Step]) -> list[tuple[Config, list[Step]]]:
    """Simpler configs for shrinking: a replica fewer (with the steps that name it gone, or
    done by another replica), the replicas named A, B, ... in order, each setting back to
    its default."""
    out: list[tuple[Config, list[Step]]] = []
    if len(config.replicas) > 2:
        for gone in config.replicas:
            if gone == config.leader_at_start:
                continue
            fewer = tuple(r for r in config.replicas if r != gone)
            cfg = replace(config, replicas=fewer, min_insync_replicas=min(config.min_insync_replicas, len(fewer)))
            out.append(_canonical(cfg, [_without(s, gone) for s in steps if not _names(s, gone)]))
            # or its steps done by another replica (a role two replicas shared in the longer run)
            out += [_canonical(cfg, [_renamed(s, {gone: other}) for s in steps]) for other in fewer]
    if config.replicas != NAMES[: len(config.replicas)]:
        out.append(_canonical(config, steps))
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
            out.append((replace(config, **{name: getattr(defaults, name)}), steps))
    return out


def _canonical(config: Config, steps: list[Step]) -> tuple[Config, list[Step]]:
    """The same run with the replicas named A, B, ... in their order."""
    rename = dict(zip(config.replicas, NAMES, strict=False))
    cfg = replace(
        config,
        replicas=tuple(rename[r] for r in config.replicas),
        initial_leader=None if config.initial_leader is None else rename[config.initial_leader],
    )
    return cfg, [_renamed(s, rename) for s in steps]


_NAMING = ("replica", "leader", "to")


def _names(step: Step, replica: str) -> bool:
    return any(getattr(step, a, None) == replica for a in _NAMING)


def _without(step: Step, replica: str) -> Step:
    if isinstance(step, Elect) and step.notify and replica in step.notify:
        return replace(step, notify=tuple(n for n in step.notify if n != replica))
    return step


def _renamed(step: Step, rename: dict[str, str]) -> Step:
    changes: dict[str, Any] = {a: rename[v] for a in _NAMING if (v := getattr(step, a, None)) in rename}
    notify = getattr(step, "notify", None)
    if notify:
        changes["notify"] = tuple(dict.fromkeys(rename.get(n, n) for n in notify))
    return replace(step, **changes) if changes else step


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
    witnesses: int = WITNESSES,
    on_run: Callable[[int], None] | None = None,
) -> FuzzReport:
    """``examples`` random runs of at most ``steps`` steps; every distinct failure, shrunk.

    ``seed`` makes the runs reproducible (``derandomize`` is seed 0); without either a
    fresh seed is drawn and reported in ``FuzzReport.seed``. ``witnesses``: how many failing
    runs of one kind are shrunk (the shortest witness is kept: shrinking finds a local
    minimum, and another run often leads to a shorter one). ``stop_at_first``: stop once the
    first kind of failure has its witnesses, as ``kconform sensitivity`` needs only one kill."""
    if seed is None:
        seed = 0 if derandomize else random.SystemRandom().randrange(2**32)
    stats = Exercised()
    started, cpu_started = time.perf_counter(), time.process_time()
    judge = Judge(adapter, generation, level, ignore, stats)
    rng = random.Random(seed)
    found: dict[str, Disagreement] = {}
    broken: dict[str, InvariantFinding] = {}
    shrunk: Counter[str] = Counter()
    try:
        for n in range(examples):
            failure = random_run(judge, rng, steps, weights)
            if on_run is not None:
                on_run(n + 1)
            run = judge.trace
            for invariant, at in judge.broken.items():
                if shrunk[invariant] < INVARIANT_WITNESSES and run.config is not None:
                    shrunk[invariant] += 1
                    finding = _invariant_finding(invariant, run.config, run.taken[:at], started, cpu_started)
                    if invariant not in broken or len(finding.path) < len(broken[invariant].path):
                        broken[invariant] = finding
            if failure is None or shrunk[failure.signature] >= witnesses:
                continue
            again = judge.replay(failure.trace.config, list(failure.trace.sent))  # type: ignore[arg-type]
            if again is None or again.signature != failure.signature:
                raise AdapterError(
                    "the implementation is not deterministic on replay: a failing run "
                    f"({failure.signature}) did not fail the same way when replayed"
                )
            shrunk[failure.signature] += 1
            small = shrink(judge, failure)
            if failure.signature not in found or _size(small) < _size(found[failure.signature]):
                found[failure.signature] = small
            if stop_at_first and shrunk[failure.signature] >= witnesses:
                break
    finally:
        adapter.close()
    stats.seconds = time.perf_counter() - started
    return FuzzReport(list(found.values()), stats, seed, list(broken.values()))


def _size(failure: Disagreement) -> tuple[int, int]:
    return len(failure.trace.sent), len(failure.trace.steps)


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
    """The failing run as a fixture: every step (those the reference refuses expected to be
    refused), the last one expecting the reference's whole observation (the runner
    compares what the implementation exposes; a safety failure replays with
    ``kconform run --level safety``)."""
    assert trace.config is not None
    steps: list[dict[str, Any]] = [{"do": {k: v for k, v in do.items() if v is not None}} for do in trace.steps]
    for index, rule in trace.rejected.items():
        steps[index]["expect_rejected"] = rule
    if steps and trace.level != "safety" and len(steps) - 1 not in trace.rejected:
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
