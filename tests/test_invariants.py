"""The incremental invariant check equals the full one, step after step.

``check(after, before)`` reuses what it found on ``before`` for the history invariants;
``check(after, before, incremental=False)`` looks at everything. On random traces of
every generation (hw-truncation included, where invariants do break) and on traces long
enough for the incremental paths to engage, both return the same violations.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from helpers import bundled_fixtures
from reference_traces import random_config, wild_step

from reference_impl import Config, Generation, StepRejected, apply, check, enabled_steps, initial_state
from reference_impl.steps import Consume, Crash, Elect, Fetch, Produce, Restart, Tick


@pytest.mark.parametrize("seed", range(4))
def test_incremental_equals_full_on_random_traces(seed: int) -> None:
    rng = random.Random(1000 + seed)
    for _ in range(60):
        state = initial_state(random_config(rng))
        for _ in range(rng.randint(0, 60)):
            choices = enabled_steps(state)
            step = wild_step(rng, state) if rng.random() < 0.2 or not choices else rng.choice(choices)
            try:
                after = apply(state, step)
            except StepRejected:
                continue
            assert check(after, state) == check(after, state, incremental=False)
            state = after


def test_incremental_equals_full_on_the_fixtures() -> None:
    """The fixtures include the hw-truncation stories, where invariants break."""
    violated = 0
    for fixture in bundled_fixtures():
        state = fixture.start()
        check(state)
        for fs in fixture.steps:
            try:
                after = apply(state, fs.step)
            except StepRejected:
                continue
            full = check(after, state, incremental=False)
            assert check(after, state) == full, (fixture.id, fs.index)
            violated += bool(full)
            state = after
    assert violated


@pytest.mark.parametrize("generation", list(Generation), ids=str)
def test_incremental_equals_full_on_long_histories(generation: Generation) -> None:
    """Hundreds of committed records and big consumes, so the incremental paths run."""
    rng = random.Random(generation.value)
    state = initial_state(Config(replicas=("A", "B", "C"), generation=generation, unclean_leader_election=True))
    check(state)
    for i in range(400):
        if i % 50 == 49:
            step = Consume(offset=rng.randint(0, 20))
        elif i % 97 == 96:  # a controlled election now and then: truncations, new epochs
            step = rng.choice([s for s in enabled_steps(state) if isinstance(s, Elect)] or [Tick(ms=1)])
        elif rng.random() < 0.3:
            step = Produce(values=tuple(f"x{i}-{k}" for k in range(rng.randint(1, 5))))
        else:
            calm = [s for s in enabled_steps(state) if not isinstance(s, Crash | Elect | Restart | Tick)]
            choices = calm or [Fetch(replica="B")]
            step = rng.choice(choices)
        try:
            after = apply(state, step)
        except StepRejected:
            continue
        assert check(after, state) == check(after, state, incremental=False), (i, step)
        state = after
    assert len(state.committed) > 64


def test_a_power_failure_lets_an_isr_member_lack_records() -> None:
    """An ISR follower that loses its unflushed tail is still in the ISR when it restarts
    (Kafka's unclean shutdown, KIP-966): StrongIsr lets it lack records (not hold others,
    seed 04's divergence still breaks it), in the model's invariants and in the safety
    properties over observations. Found by kconform fuzz once its crashes lost unflushed
    tails."""
    from conformance.safety import SafetyMonitor
    from reference_impl import Config, apply, check, initial_state, observe
    from reference_impl.steps import Crash, DeliverFetch, Fetch, Produce, Restart

    steps = [Produce(("v1", "v2")), Fetch("B"), DeliverFetch("B"), Fetch("B"), Crash("B", unflushed_from=1)]
    for power_failure in (False, True):
        state = initial_state(Config(replicas=("A", "B")))
        monitor = SafetyMonitor(("A", "B"), "leader-epoch")
        found: list[str] = []
        for step in [*steps[:-1], Crash("B", unflushed_from=1 if power_failure else None), Restart("B")]:
            before, state = state, apply(state, step)
            found += [v.invariant for v in check(state, before)]
            found += [f.property for f in monitor.observe({"kind": step.kind, **vars(step)}, observe(state))]
        assert state.controller.isr == ("A", "B") and state.replica("A").hw == 2
        assert found == []
        assert state.replica("B").leo == (1 if power_failure else 2)


OPEN_STRONG_ISR = Path(__file__).parent / "data" / "strong-isr-open-traces.jsonl"


@pytest.mark.xfail(
    strict=True,
    reason="open: the 1M-trace corpus (kconform generate --traces 1000000 --seed 1) has 6 traces where the "
    "reference breaks its own StrongIsr (and the safety monitor reports SAFE-STRONG-ISR): e.g. s1-134626, a stale "
    "leader re-elected keeps a follower's LEO from before that follower truncated (Partition.makeLeader resets "
    "follower state only for a new leader), so its HW passes the follower's log. Kafka's behaviour there decides "
    "whether the model or the invariant changes; this test passes (and must be un-marked) once it is settled.",
)
def test_strong_isr_holds_on_the_corpus_traces_that_broke_it() -> None:
    from conformance.corpus.format import parse_line

    broken = []
    for number, line in enumerate(OPEN_STRONG_ISR.read_text(encoding="utf-8").splitlines(), 1):
        trace = parse_line(line, str(OPEN_STRONG_ISR), number)
        state = trace.fixture.start()
        for fs in trace.fixture.steps:
            before = state
            try:
                state = apply(state, fs.step)
            except StepRejected:
                continue
            if check(state, before):
                broken.append(trace.fixture.id)
                break
    assert broken == []
