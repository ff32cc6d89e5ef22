"""Random testing of an implementation: the reference and the implementation, step for step.

A hypothesis ``RuleBasedStateMachine`` draws a partition config, then repeatedly picks one
of the steps the reference says are enabled (``enabled_steps``: preconditions are never
re-coded here), in the form the implementation can perform (a ``fetch`` becomes a
``fetch_round`` for an implementation with whole rounds only, and an answer it cannot be
sent is delivered on the reference side as the round's end), applies it to both, and
judges the implementation at the chosen level (``levels.py``):

- ``exact``: every reported field equals the reference's after every step;
- ``settled``: outcome fields at quiescent points, against every reference state the
  visible steps reach with a few internal steps (``settle.py``);
- ``safety``: only the invariants on the implementation's own observations (``safety.py``),
  which every level also checks.

Each kind of failure (level and field, or safety property) is its own exception class, so
hypothesis shrinks and reports each distinct failure separately; ``fuzz_all`` returns every
one with its own witness fixture, and counts what the runs exercised (steps per kind,
rules fired by the reference).
"""

from __future__ import annotations

import fnmatch
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import yaml
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test

from reference_impl import (
    Config,
    Generation,
    State,
    Step,
    StepRejected,
    apply,
    enabled_steps,
    initial_state,
    observe,
)
from reference_impl.steps import DeliverEpoch, DeliverFetch, EpochRequest, EpochRound, Fetch, FetchRound

from .adapter import Adapter, AdapterError, Description
from .compare import MISSING, all_divergences
from .conventions import adjust_expected, normalise
from .judge import SPLIT_KINDS
from .levels import settled_part
from .runner import comparable
from .safety import SafetyMonitor
from .settle import Frontier
from .wire import wire_step

KIND_ORDER = [
    "fetch",
    "fetch_round",
    "produce",
    "deliver_fetch",
    "epoch_request",
    "epoch_round",
    "deliver_epoch",
    "tick",
    "elect",
    "deliver_leader_and_isr",
    "deliver_alter_partition",
    "crash",
    "restart",
    "isr_expiration",
    "consume",
    "epoch_query",
]
"""Kinds in the order hypothesis favours (it leans to the first of a list, and shrinks
towards it): replication first, reads last."""


@dataclass
class Trace:
    """The run so far, kept for the witness fixture: the steps as the reference took them
    (answers an implementation received by itself included, as ``deliver_*`` steps)."""

    config: Config | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    observations: list[dict[str, Any]] = field(default_factory=list)
    level: str = "exact"


class Disagreement(AssertionError):
    """The implementation fails the level; ``trace`` holds the run, ``reason`` what failed."""

    def __init__(self, message: str, trace: Trace, signature: str = "") -> None:
        super().__init__(message)
        self.trace = trace
        self.reason = message
        self.signature = signature


_KINDS: dict[str, type[Disagreement]] = {}


def _disagreement(signature: str) -> type[Disagreement]:
    """One exception class per kind of failure, so hypothesis keeps them apart."""
    if signature not in _KINDS:
        _KINDS[signature] = type(f"Disagreement[{signature}]", (Disagreement,), {})
    return _KINDS[signature]


@dataclass
class Exercised:
    """What the runs did: steps per kind and rules the reference fired."""

    steps: Counter[str] = field(default_factory=Counter)
    rules: Counter[str] = field(default_factory=Counter)
    runs: int = 0


@dataclass
class FuzzReport:
    failures: list[Disagreement]
    exercised: Exercised


def configs(generation: Generation) -> st.SearchStrategy[Config]:
    return st.builds(
        Config,
        replicas=st.sampled_from([("A", "B"), ("A", "B", "C")]),
        generation=st.just(generation),
        min_insync_replicas=st.just(1),
        unclean_leader_election=st.booleans(),
        replica_lag_time_max_ms=st.sampled_from([1000, 30000]),
        replica_high_watermark_checkpoint_interval_ms=st.sampled_from([0, 5000]),
    )


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


def make_machine(
    adapter: Adapter,
    generation: Generation,
    level: str = "exact",
    ignore: dict[str, str] | None = None,
    exercised: Exercised | None = None,
) -> type[RuleBasedStateMachine]:
    """A state machine class judging ``adapter`` against the reference at ``level``.

    One adapter serves every run (``reset`` starts each afresh), so a stdio implementation
    is not restarted per example unless it fails. ``ignore``: known differences, field path
    or property globs -> reason.
    """
    description: Description = adapter.describe()
    kinds = frozenset(description.steps)
    lacking = frozenset(k for k in SPLIT_KINDS if k not in kinds)
    ignored = dict(ignore or {})
    stats = exercised if exercised is not None else Exercised()

    def known(path: str) -> bool:
        return any(fnmatch.fnmatchcase(path, pattern) for pattern in ignored)

    class Judged(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.state: State | None = None
            self.trace = Trace(level=level)
            self.monitor: SafetyMonitor | None = None
            self.frontier: Frontier | None = None
            self.produced = 0

        def fail(self, signature: str, message: str) -> None:
            raise _disagreement(signature)(message, self.trace, signature)

        @initialize(config=configs(generation))
        def start(self, config: Config) -> None:
            stats.runs += 1
            self.state = initial_state(config)
            self.trace.config = config
            self.monitor = SafetyMonitor(config.replicas, generation.value)
            self.frontier = Frontier(self.state, lacking) if level == "settled" else None
            try:
                adapter.reset(config.to_dict())
            except AdapterError as exc:
                self.fail("error:reset", f"reset failed: {exc.message}")

        def _reference(self, step: Step) -> None:
            assert self.state is not None
            self.state = apply(self.state, step)
            stats.steps[step.kind] += 1
            stats.rules.update(self.state.fired)
            self.trace.steps.append(wire_step(step, self.produced))
            self.trace.observations.append(observe(self.state))

        @rule(data=st.data())
        def step(self, data: st.DataObject) -> None:
            assert self.state is not None and self.monitor is not None
            choices = [p for p in (proposal(s, kinds) for s in enabled_steps(self.state)) if p is not None]
            if not choices:
                return
            # a kind first, then one of its steps: a kind with many variants (produce) does not
            # crowd out one with few (fetch), so every kind is exercised
            by_kind: dict[str, list[Step]] = {}
            for p in dict.fromkeys(choices):
                by_kind.setdefault(p.kind, []).append(p)
            kind = data.draw(st.sampled_from(sorted(by_kind, key=KIND_ORDER.index)), label="kind")
            chosen = data.draw(st.sampled_from(by_kind[kind]), label="step")
            do = wire_step(chosen, self.produced)
            number = len(self.trace.steps) + 1
            try:
                self._reference(chosen)
            except StepRejected:  # a lowered step the reference cannot take here: not proposed
                return
            fired = " ".join(self.state.fired)
            after_step = self.state
            internal: list[Step] = []
            # answers the implementation receives by itself (it has no step to be sent them)
            for _ in range(4):
                pending = [DeliverFetch(m.dst) for m in self.state.fetch_responses if "deliver_fetch" in lacking]
                pending += [DeliverEpoch(m.dst) for m in self.state.epoch_responses if "deliver_epoch" in lacking]
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
                answer = adapter.step(do)
            except AdapterError as exc:
                self.fail("error:step", f"step {number} {do}: the implementation failed: {exc.message}")
            if answer.rejected is not None:
                if level == "safety":
                    return
                self.fail(
                    f"{level}:(step)",
                    f"step {number} {do}: rejected by the implementation ({answer.rejected}), "
                    f"the reference performs it [rules: {fired}]",
                )
            observed = normalise(answer.observation or {}, description, self.state.config.replicas)
            for finding in self.monitor.observe(do, observed):
                if not known(finding.property):
                    self.fail(
                        f"safety:{finding.property}",
                        f"step {number} {do}: safety property {finding.property} violated: {finding.detail} "
                        f"[rules fired by the reference: {fired}]",
                    )
            if level == "safety":
                return
            reference = observe(self.state)
            roles = {n: r["role"] for n, r in reference["replicas"].items()}
            expected = comparable(adjust_expected(reference, description, observed, roles), description)
            if level == "settled":
                assert self.frontier is not None
                self.frontier.step(chosen, after_step)
                for extra in internal:
                    self.frontier.step(extra, None, internal=True)
                if internal and self.state not in self.frontier.states:
                    self.frontier.states.insert(0, self.state)
                flight = reference["in_flight"]
                if any(flight[k] for k in ("fetch_responses", "epoch_responses", "leader_and_isr")):
                    return
                expected = settled_part(expected)
                if self.frontier.match(expected, observed):
                    return
            for d in all_divergences(expected, observed):
                if known(d.path):
                    continue
                actual = "(not reported)" if d.actual is MISSING else d.actual
                self.fail(
                    _signature(level, d.path),
                    f"step {number} {do}: {d.path}: reference {d.expected!r}, implementation {actual!r} "
                    f"[level {level}; rules fired by the reference: {fired}]",
                )

    Judged.__name__ = f"Judged_{generation.value.replace('-', '_')}"
    return Judged


def fuzz_all(
    adapter: Adapter,
    generation: Generation,
    examples: int = 100,
    steps: int = 30,
    derandomize: bool = False,
    level: str = "exact",
    ignore: dict[str, str] | None = None,
) -> FuzzReport:
    """Run the machine; every distinct failure (shrunk), and what was exercised."""
    stats = Exercised()
    machine = make_machine(adapter, generation, level, ignore, stats)
    failures: list[Disagreement] = []
    try:
        run_state_machine_as_test(
            machine,
            settings=settings(
                max_examples=examples,
                stateful_step_count=steps,
                deadline=None,
                database=None,
                derandomize=derandomize,
                suppress_health_check=list(HealthCheck),
                report_multiple_bugs=True,
                # no "explain" phase: it replays the shrunk run many times over, and the
                # witness fixture already says what happened
                phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
            ),
        )
    except Disagreement as exc:
        failures.append(exc)
    except BaseExceptionGroup as group:
        found, rest = group.split(Disagreement)
        failures += _leaves(found)
        if rest is not None:
            raise rest from None
    except Flaky as exc:  # an implementation that answers differently on replay
        raise AdapterError(f"the implementation is not deterministic on replay: {exc}") from None
    finally:
        adapter.close()
    unique: dict[str, Disagreement] = {}
    for failure in failures:
        unique.setdefault(failure.signature or str(failure), failure)
    return FuzzReport(list(unique.values()), stats)


def _leaves(group: BaseExceptionGroup[Any] | None) -> list[Disagreement]:
    if group is None:
        return []
    out: list[Disagreement] = []
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            out += _leaves(exc)
        elif isinstance(exc, Disagreement):
            out.append(exc)
    return out


def fuzz(
    adapter: Adapter,
    generation: Generation,
    examples: int = 100,
    steps: int = 30,
    derandomize: bool = False,
    level: str = "exact",
) -> Trace | None:
    """The first failure's shrunk run, or None (``fuzz_all`` gives every one)."""
    report = fuzz_all(adapter, generation, examples, steps, derandomize, level)
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
