"""Differential random testing: the reference and an implementation, step for step.

A hypothesis ``RuleBasedStateMachine`` draws a partition config, then repeatedly picks
one of the steps the reference says are enabled (``enabled_steps``: preconditions are
never re-coded here), applies it to both, and compares what the implementation reports
with the reference's observation (only the fields the implementation exposes). After
every step the reference's invariants are checked too. When they disagree, hypothesis
shrinks the run; ``witness_fixture`` turns the shrunk run into a YAML fixture that
``kconform run`` can replay.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from reference_impl import (
    Config,
    Generation,
    State,
    StepRejected,
    apply,
    check,
    enabled_steps,
    initial_state,
    observe,
    step_to_dict,
)

from .adapter import Adapter, AdapterError
from .compare import first_divergence
from .runner import comparable


@dataclass
class Trace:
    """The run so far, kept for the witness fixture."""

    config: Config | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    observations: list[dict[str, Any]] = field(default_factory=list)


class Disagreement(AssertionError):
    """The implementation and the reference disagree; ``trace`` holds the run."""

    def __init__(self, message: str, trace: Trace) -> None:
        super().__init__(message)
        self.trace = trace


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


def make_machine(adapter: Adapter, generation: Generation) -> type[RuleBasedStateMachine]:
    """A state machine class comparing ``adapter`` with the reference.

    One adapter serves every run (``reset`` starts each afresh), so a stdio
    implementation is not restarted per example unless it fails.
    """
    description = adapter.describe()

    class Differential(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.adapter = adapter
            self.description = description
            self.state: State | None = None
            self.trace = Trace()

        @initialize(config=configs(generation))
        def start(self, config: Config) -> None:
            self.state = initial_state(config)
            self.trace.config = config
            try:
                self.adapter.reset(config.to_dict())
            except AdapterError as exc:
                raise Disagreement(f"reset failed: {exc.message}", self.trace) from None

        @rule(data=st.data())
        def step(self, data: st.DataObject) -> None:
            assert self.state is not None
            supported = set(self.description.steps)
            choices = [s for s in enabled_steps(self.state) if s.kind in supported]
            if not choices:
                return
            chosen = data.draw(st.sampled_from(choices), label="step")
            do = step_to_dict(chosen)
            try:
                self.state = apply(self.state, chosen)
            except StepRejected as exc:  # cannot happen: the step was enabled
                raise AssertionError(f"enabled step rejected by the reference: {exc}") from exc
            expected = observe(self.state)
            self.trace.steps.append(do)
            self.trace.observations.append(expected)
            try:
                answer = self.adapter.step(do)
            except AdapterError as exc:
                raise Disagreement(f"after {do}: the implementation failed: {exc.message}", self.trace) from None
            if answer.rejected is not None:
                raise Disagreement(f"step {do} rejected by the implementation: {answer.rejected}", self.trace)
            found = first_divergence(comparable(expected, self.description), answer.observation or {})
            if found is not None:
                raise Disagreement(
                    f"after {do}: {found.path}: reference {found.expected!r}, implementation {found.actual!r}",
                    self.trace,
                )

        @invariant()
        def reference_invariants_hold(self) -> None:
            if self.state is None or generation is Generation.HW_TRUNCATION:
                return
            violations = check(self.state)
            assert not violations, violations

    Differential.__name__ = f"Differential_{generation.value.replace('-', '_')}"
    return Differential


def fuzz(
    adapter: Adapter,
    generation: Generation,
    examples: int = 100,
    steps: int = 30,
    derandomize: bool = False,
) -> Trace | None:
    """Run the differential machine; return the shrunk failing run, or None.

    ``derandomize`` makes the runs the same every time (tests, CI); by default each call
    explores new ones.
    """
    machine = make_machine(adapter, generation)
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
            ),
        )
    except Disagreement as exc:
        return exc.trace
    finally:
        adapter.close()
    return None


def witness_fixture(trace: Trace, fixture_id: str = "fuzz-witness") -> str:
    """The failing run as a fixture: every step, the last one expecting the reference's
    whole observation (the runner compares what the implementation exposes)."""
    assert trace.config is not None
    steps: list[dict[str, Any]] = [{"do": do} for do in trace.steps]
    if steps:
        steps[-1]["expect"] = trace.observations[-1]
    config = {k: v for k, v in trace.config.to_dict().items() if v is not None}
    generation = config.pop("generation")
    doc = {
        "id": fixture_id,
        "title": "A run where the implementation disagreed with the reference (kconform fuzz)",
        "source": "kconform fuzz",
        "tags": ["fuzz"],
        "config": {**config, "generation": generation},
        "steps": steps,
    }
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120)
