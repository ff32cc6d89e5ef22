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

import contextlib
import json
import random
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from reference_impl import (
    Config,
    Generation,
    State,
    Step,
    StepRejected,
    apply,
    check,
    initial_state,
)
from reference_impl.steps import SPLIT_KINDS, Elect, EpochRequest, EpochRound, Fetch, FetchRound, Tick

from ..adapters.base import Adapter, AdapterError, Description
from ..adapters.limits import CONTROLLER_KINDS, fit
from ..fixtures.writing import fixture_yaml
from ..judging.conventions import unsupported_step_field
from ..judging.runner import FAILING_AT, run_fixture
from ..judging.safety import Coverage, certificate
from ..judging.settle import deliveries
from ..judging.signature import field_kind
from .distribution import NAMES, WEIGHTS, RandomChooser, draw_config, draw_initial, draw_steps, simpler, swarm
from .explore import EXPECTED_VIOLATIONS, alphabet, state_key
from .own_path import OwnPathRun, own_path
from .walk import walk

DELIVERIES = 16
"""At most this many answers an implementation receives by itself after one step (each
delivery can put another answer in flight; a cluster of five has at most a few)."""
SHRINK_REPLAYS = 600
"""At most this many replays to shrink one failing run (each at most the run's length)."""
WITNESSES = 3
"""Failing runs shrunk per kind of failure; the shortest witness is kept."""
INVARIANT_WITNESSES = 10
"""Runs shrunk per invariant the reference breaks (cheap: the reference alone is replayed)."""
INITIAL_ONE_IN = 3
"""One run in INITIAL_ONE_IN starts from a drawn state (``distribution.draw_initial``: a
log start above a follower's LEO, a deposed leader's tail, ...), as the corpus generator's
traces do, on an implementation that can start from one (capability ``initial_state``)."""


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
    initial: dict[str, Any] | None = None
    """The state the run starts from (a fixture's ``initial:`` block, every default spelled
    out: ``distribution.draw_initial``), or None for the empty partition."""


class Disagreement(AssertionError):
    """The implementation fails the level; ``trace`` holds the run, ``reason`` what failed."""

    def __init__(
        self, message: str, trace: Trace, signature: str = "", rules: tuple[str, ...] = (), step: int = 0
    ) -> None:
        super().__init__(message)
        self.trace = trace
        self.reason = message
        self.signature = signature
        self.rules = rules
        self.step = step
        """The failing step's number, from 1 (past the run's steps: a step of the fair suffix)."""
        """The rules the reference fired at the failing step."""


@dataclass
class Exercised:
    """What the runs did: steps per kind and rules the reference fired."""

    steps: Counter[str] = field(default_factory=Counter)
    rules: Counter[str] = field(default_factory=Counter)
    safety: dict[str, Coverage] = field(default_factory=dict)
    """Per safety property, over every run judged: how often it was checked, what it lacked."""
    exercised: Counter[str] = field(default_factory=Counter)
    """Per safety property: how often the reference evaluated it on the same runs."""
    skipped: Counter[str] = field(default_factory=Counter)
    """Runs that needed what the implementation declares it lacks (its limits), by reason."""
    refusals: Counter[str] = field(default_factory=Counter)
    """Level safety (the implementation's own path): proposals it refused, by step kind."""
    runs: int = 0
    shrink_runs: int = 0
    seconds: float = 0.0

    def cover(self, coverage: Mapping[str, Coverage]) -> None:
        """Add one run's safety coverage."""
        for pid, c in coverage.items():
            seen = self.safety.get(pid)
            if seen is None:
                self.safety[pid] = c
            else:
                self.safety[pid] = Coverage(
                    seen.checked + c.checked,
                    tuple(sorted({*seen.missing, *c.missing})),
                    seen.applicable or c.applicable,
                )

    def certificate(self) -> tuple[bool, str]:
        """``safety.certificate`` over every run judged (with what the reference exercised on
        the same runs, for runs drawn on the reference; strict on the implementation's own path)."""
        return certificate([self.safety] if self.safety else [], self.exercised or None)

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
    interrupted: bool = False
    """Ctrl-C stopped it: what the finished runs found is kept (``stats.runs`` of them)."""


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
    return f"{level}:{field_kind(path)}"


class Judge:
    """One implementation judged against the reference, one run at a time.

    A run is drawn on the reference alone (``start``, then ``take`` per step: the steps the
    reference takes, those it refuses, and the answers the implementation receives by
    itself), then judged whole by the one engine (``finish``: the run as a fixture,
    ``walk.walk``, through ``runner.run_fixture`` at ``level``), exactly as ``kconform run``
    would judge that fixture. ``finish`` returns the ``Disagreement`` of the first failure at
    the level, if any.

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
        self.state: State | None = None
        self.trace = Trace(level=level)
        self.invariants = True
        self.broken: dict[str, int] = {}
        """Invariant -> the number of the step after which the reference first broke it, this run."""
        self.runs = 0
        self.progress = True
        """End every run with a fair suffix on the implementation's own path and check the
        PROGRESS-* properties (``judge``'s ``progress``)."""

    def lower(self, step: Step) -> Step | None:
        return proposal(step, self.kinds)

    @property
    def lowering(self) -> Callable[[Step], Step | None] | None:
        """``lower``, or None for an implementation that performs every step kind as it is."""
        from reference_impl import STEP_TYPES

        return None if self.kinds >= set(STEP_TYPES) else self.lower

    def weights(self, weights: Mapping[str, int]) -> dict[str, int]:
        """``weights`` without the controller's steps for an implementation without a controller."""
        if "controller" not in (self.description.limits.get("without") or ()):
            return dict(weights)
        return {**weights, **dict.fromkeys(CONTROLLER_KINDS, 0)}

    def honours(self, step: Step) -> bool:
        return unsupported_step_field(step, self.description) is None

    def start(self, config: Config, initial: dict[str, Any] | None = None) -> None:
        self.state = initial_state(config, initial)
        self.trace = Trace(config=config, level=self.level, initial=initial)
        self.broken = {}

    def _reference(self, step: Step) -> None:
        assert self.state is not None
        before = self.state
        self.state = apply(before, step)
        if self.invariants:
            for violation in check(self.state, before):
                self.broken.setdefault(violation.invariant, len(self.trace.taken) + 1)
        self.trace.taken.append(step)
        self.trace.sent.append(step)
        self.stats.steps[step.kind] += 1
        self.stats.rules.update(self.state.fired)

    def take(self, chosen: Step, deliver: bool = True) -> bool:
        """Add ``chosen`` to the run (a step the reference refuses too: the implementation
        must refuse it, except at level safety, where it is sent and judged only for the
        properties), then the answers the implementation receives by itself (it has no step
        to be sent them) unless ``deliver`` is False (a run replayed as it was drawn already
        has them)."""
        assert self.state is not None
        try:
            self._reference(chosen)
        except StepRejected:
            self.trace.sent.append(chosen)
            self.stats.steps["refused"] += 1
            return True
        for _ in range(DELIVERIES if self.lacking and deliver else 0):
            pending = deliveries(self.state, self.lacking)
            if not pending:
                break
            try:
                self._reference(pending[0])
            except StepRejected:
                break
        return True

    def finish(self, drawn: bool = True) -> Disagreement | None:
        """Judge the run since ``start`` (the one engine); its failure, if any. ``drawn``:
        a run drawn, not one ``replay`` judges again to shrink it, whose skip (even an
        empty candidate's) is not counted as a run's."""
        config = self.trace.config
        assert config is not None
        steps = list(self.trace.sent)
        self.runs += 1
        walked = walk(
            config, steps, f"fuzz-run-{self.runs}", source="kconform fuzz", group="fuzz", initial=self.trace.initial
        )
        self.trace.steps = [dict(fs.do) for fs in walked.fixture.steps]
        self.trace.observations = [o if o is not None else {} for o in walked.observations]
        self.trace.rejected = dict(walked.rejected)
        result = run_fixture(
            self.adapter,
            self.description,
            walked.fixture,
            self.description.name,
            walked.rules,
            self.level,
            self.ignored,
            progress=self.progress,
        )
        if result.outcome == "errored":
            with contextlib.suppress(Exception):
                self.adapter.restart()
            where = "reset" if result.reason.startswith("reset") else "step"
            upto = result.steps_run + 1 if where == "step" else 0
            detail = f"\n{result.detail.strip()}" if result.detail.strip() else ""
            return self._disagreement(f"error:{where}", f"the implementation failed: {result.reason}{detail}", upto, ())
        if result.outcome in ("passed", "failed"):
            for pid, c in result.safety.items():
                self.stats.exercised[pid] += int(c.get("exercised", c["checked"]))
            self.stats.cover(
                {
                    pid: Coverage(int(c["checked"]), tuple(c["missing"]), bool(c["applicable"]))
                    for pid, c in result.safety.items()
                }
            )
        if result.outcome == "skipped":  # it needs what the implementation declares it lacks (limits)
            if drawn:
                self.stats.skipped[re.sub(r"\d+", "N", result.reason)] += 1
            return None
        relevant = [f for f in result.failures if f["level"] in FAILING_AT[self.level] and "known" not in f]
        if not relevant:
            return None
        first = relevant[0]
        level = "settled" if first["level"] == "stop" and self.level == "settled" else first["level"]
        level = self.level if level == "stop" else level
        number = first["step"]
        do = self.trace.steps[number - 1] if number <= len(self.trace.steps) else {}
        rules = tuple(first.get("rules") or ())
        if first["level"] == "safety":
            signature = f"safety:{first['field']}"
            text = f"safety property {first['field']} violated: {first['actual']}"
        elif first["field"] == "(step)":
            refused = number - 1 in walked.rejected
            signature = f"{level}:(refused)" if refused else f"{level}:(step)"
            text = f"expected {first['expected']}, the implementation {first['actual']}"
            if self.level == "settled":
                verb = "refuses" if refused else "performs"
                text += f"; the reference {verb} it (and so does every reference state the visible steps can reach)"
        else:
            signature = _signature(level, first["field"])
            text = (
                f"{first['field']}: reference {first['expected']!r}, implementation {first['actual']!r} [level {level}]"
            )
        shown = _step_text(do) if do else f"({first['kind']}, in the fair suffix after the run)"
        fired = f" [rules fired by the reference: {' '.join(rules)}]" if rules else ""
        message = f"step {number} {shown}: {text}{fired}"
        return self._disagreement(signature, message, number, rules)

    def _disagreement(self, signature: str, message: str, upto: int, rules: tuple[str, ...]) -> Disagreement:
        trace = self.trace
        if upto:
            trace = replace(
                trace,
                steps=trace.steps[:upto],
                observations=trace.observations[:upto],
                sent=trace.sent[:upto],
                rejected={i: r for i, r in trace.rejected.items() if i < upto},
            )
        return Disagreement(message, trace, signature, rules, upto)

    def own(self, config: Config, run: OwnPathRun) -> Disagreement | None:
        """The verdict of a run on the implementation's own path (level safety)."""
        for kind, n in run.accepted.items():
            self.stats.steps[kind] += n
        self.stats.refusals.update(run.refused)
        if run.watch is not None and not run.error:
            self.stats.cover(run.watch.monitor.coverage())
        self.trace = Trace(config=config, level="safety", steps=run.steps, sent=run.sent, taken=run.sent)
        if run.error:
            with contextlib.suppress(Exception):
                self.adapter.restart()
            kind = "reset" if run.error.startswith("reset") else "step"
            return self._disagreement(f"error:{kind}", f"the implementation failed: {run.error}", run.at, ())
        if run.finding is None:
            return None
        number = run.at
        message = (
            f"step {number} {run.steps[number - 1]}: safety property {run.finding.property} violated: "
            f"{run.finding.detail} (on the implementation's own path)"
        )
        return self._disagreement(f"safety:{run.finding.property}", message, number, ())

    def replay(self, config: Config, steps: list[Step], initial: dict[str, Any] | None = None) -> Disagreement | None:
        """Judge ``steps`` from a reset to ``initial`` (as drawn: steps the reference refuses
        stay, to be refused); the failure, if any."""
        self.stats.shrink_runs += 1
        try:
            self.start(config, initial)
            for step in steps:
                self.take(step, deliver=False)
            return self.finish(drawn=False)
        except AdapterError:
            return None


def own_path_run(
    judge: Judge, rng: random.Random, steps: int, weights: Mapping[str, int] = WEIGHTS
) -> Disagreement | None:
    """A safety run on the implementation's own path (``own_path.py``): steps proposed from
    its own observations, refusals counted, the run going on after them."""
    chooser = RandomChooser(rng)
    config = fit(draw_config(chooser, judge.generation), judge.description.limits)
    judge.stats.runs += 1
    run = own_path(judge.adapter, judge.description, config, chooser, steps, swarm(chooser, judge.weights(weights)))
    return judge.own(config, run)


def _step_text(do: Mapping[str, Any]) -> str:
    """A step as a user writes it in a fixture: ``produce values=[v1] acks=all``."""
    fields = " ".join(
        f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in do.items() if k != "kind" and v is not None
    )
    return f"({do.get('kind')}{' ' + fields if fields else ''})"


def random_run(
    judge: Judge, rng: random.Random, steps: int, weights: Mapping[str, int] = WEIGHTS
) -> Disagreement | None:
    """One random run of at most ``steps`` steps; its failure, if any."""
    if judge.level == "safety":
        return own_path_run(judge, rng, steps, weights)
    chooser = RandomChooser(rng)
    config = fit(draw_config(chooser, judge.generation), judge.description.limits)
    weights = swarm(chooser, judge.weights(weights))
    judge.stats.runs += 1
    lowering = judge.lowering
    honours = judge.honours if judge.description.step_fields else None
    initial = draw_initial(chooser, config, INITIAL_ONE_IN) if judge.description.initial_state else None
    judge.start(config, initial)
    taken = 0
    while taken < steps:
        assert judge.state is not None
        previous = judge.trace.sent[-1] if judge.trace.sent else None
        batch = draw_steps(chooser, judge.state, weights, lowering, honours, refused=True, previous=previous)
        if not batch:
            break
        for step in batch[: steps - taken]:
            judge.take(step)
            taken += 1
    return judge.finish()


Attempt = Callable[[Config, list[Step]], list[Step] | None]
"""Replays a run; the steps taken up to the failure when it fails the same way, else None."""


def shrink_run(
    config: Config, steps: list[Step], fails: Attempt, budget: int = SHRINK_REPLAYS, configs: bool = True
) -> tuple[Config, list[Step]]:
    """A smaller run that ``fails`` the same way: steps removed in chunks (halves down to
    single steps, from the end), then in pairs (two steps that only go together), adjacent
    ticks merged into one, each step simplified (``distribution.simpler``), then the config
    simplified (``_simpler_runs``; not with ``configs`` False: a run from a drawn state,
    whose ``initial:`` names the config's replicas), until nothing more helps or ``budget``
    replays are spent."""
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
        for simple_config, simple_steps in _simpler_runs(config, best) if configs else ():
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

    initial = failure.trace.initial

    def fails(cfg: Config, steps: list[Step]) -> list[Step] | None:
        found = judge.replay(cfg, steps, initial)
        return list(found.trace.sent) if found is not None and found.signature == failure.signature else None

    config, steps = shrink_run(failure.trace.config, list(failure.trace.sent), fails, budget, initial is None)
    final = judge.replay(config, steps, initial)
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
    interrupted = False
    try:
        for n in range(examples):
            try:
                failure = random_run(judge, rng, steps, weights)
            except KeyboardInterrupt:  # Ctrl-C: keep what the finished runs found
                interrupted = True
                break
            if on_run is not None:
                on_run(n + 1)
            run = judge.trace
            for invariant, at in judge.broken.items():
                # shrunk from the empty partition (a drawn start's violations show in its own runs)
                if shrunk[invariant] < INVARIANT_WITNESSES and run.config is not None and run.initial is None:
                    shrunk[invariant] += 1
                    finding = _invariant_finding(invariant, run.config, run.taken[:at], started, cpu_started)
                    if invariant not in broken or len(finding.path) < len(broken[invariant].path):
                        broken[invariant] = finding
            if failure is None or shrunk[failure.signature] >= witnesses:
                continue
            if failure.signature.startswith("error:"):  # it crashed or hung: report it as it happened
                shrunk[failure.signature] += 1
                found.setdefault(failure.signature, failure)
                continue
            again = judge.replay(failure.trace.config, list(failure.trace.sent), failure.trace.initial)  # type: ignore[arg-type]
            if again is None or again.signature != failure.signature:
                raise AdapterError(
                    "the implementation is not deterministic on replay: a failing run "
                    f"({failure.signature}) did not fail the same way when replayed",
                    failure.reason,
                )
            shrunk[failure.signature] += 1
            try:
                small = shrink(judge, failure)
            except KeyboardInterrupt:
                interrupted, small = True, failure
            if interrupted:
                found.setdefault(failure.signature, small)
                break
            if failure.signature not in found or _size(small) < _size(found[failure.signature]):
                found[failure.signature] = small
            if stop_at_first and shrunk[failure.signature] >= witnesses:
                break
    finally:
        adapter.close()
    stats.seconds = time.perf_counter() - started
    return FuzzReport(list(found.values()), stats, seed, list(broken.values()), interrupted)


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
    ignore: dict[str, str] | None = None,
) -> Trace | None:
    """The first failure's shrunk run, or None (``fuzz_all`` gives every one)."""
    report = fuzz_all(adapter, generation, examples, steps, derandomize, level, ignore, seed=seed, stop_at_first=True)
    return report.failures[0].trace if report.failures else None


def witness_fixture(trace: Trace, fixture_id: str = "fuzz-witness", reason: str = "") -> str:
    """The failing run as a fixture: every step (those the reference refuses expected to be
    refused), the last one expecting the reference's whole observation (the runner
    compares what the implementation exposes; a safety failure replays with
    ``kconform run --level safety``)."""
    assert trace.config is not None
    return fixture_yaml(
        fixture_id,
        "A run where the implementation failed kconform fuzz",
        source="kconform fuzz",
        description=reason or "found by kconform fuzz",
        tags=["fuzz"],
        config=trace.config,
        initial=trace.initial,  # a run from a drawn start (distribution.draw_initial), or None
        steps=trace.steps,
        rejected=trace.rejected,
        expect=trace.observations[-1] if trace.steps and trace.level != "safety" else None,
        generation_last=True,
    )
