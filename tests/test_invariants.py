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


def _traces_breaking(invariants: set[str] | None = None) -> list[str]:
    """Ids of the stored traces whose steps, replayed on the reference, break one of
    ``invariants`` (any invariant when None) at some step."""
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
            if any(invariants is None or v.invariant in invariants for v in check(state, before)):
                broken.append(trace.fixture.id)
                break
    return broken


def test_strong_isr_holds_on_the_corpus_traces_that_broke_it() -> None:
    """The 1M-trace corpus (seed 1, made before LAI-5) had 6 traces where the reference
    broke its own StrongIsr: five by applying a LeaderAndIsr ahead of an older one still in
    flight (now LAI-5), one by a power failure's overwritten tail (now allowed from the lost
    offset on). Their steps, replayed on today's reference, keep every invariant."""
    assert _traces_breaking() == []


def test_lai_5_is_what_keeps_strong_isr_on_five_of_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the in-order delivery (LAI-5) the five stale-leader traces break StrongIsr
    again: the replay above can fail."""
    from reference_impl import controller

    monkeypatch.setattr(controller, "_deliver_all_queued", lambda d, replica_id: None)
    assert _traces_breaking({"StrongIsr"}) == ["s1-134626", "s1-531782", "s1-545686", "s1-604773", "s1-905896"]


@pytest.mark.parametrize(
    ("member_log", "lost_from", "found"),
    [
        (["a", "x", "y"], 1, False),  # other records from the lost offset on: allowed
        (["a", "b", "y"], 1, False),
        (["a", "x", "y"], 2, True),  # a different record below the lost offset
        (["x", "b", "c"], 1, True),
        (["a"], 2, False),  # lacks records (a prefix): allowed after any power failure
        (["a", "x", "y"], None, True),  # no power failure: any difference below the HW
        (["a", "b", "c"], None, False),
    ],
)
def test_safe_strong_isr_after_a_power_failure(member_log: list[str], lost_from: int | None, found: bool) -> None:
    """SAFE-STRONG-ISR over observations: after a power failure an ISR member may lack
    records, or hold others from the lowest offset lost on; below it, never."""
    from conformance.safety import _state_findings

    def rep(role: str, log: list[str], hw: int) -> dict[str, object]:
        return {"online": True, "role": role, "leader_epoch": 1, "hw": hw, "leo": len(log), "log": log}

    obs = {
        "leader": "A",
        "leader_epoch": 1,
        "isr": ["A", "B"],
        "replicas": {"A": rep("leader", ["a", "b", "c"], 3), "B": rep("follower", member_log, 0)},
    }
    findings = [f.property for f in _state_findings(obs, ("A", "B"), lost_from)]
    assert ("SAFE-STRONG-ISR" in findings) is found


def test_the_monitor_counts_a_power_failure_only_when_records_were_lost() -> None:
    """``crash unflushed_from`` at the LEO loses nothing: SAFE-STRONG-ISR stays strict."""
    from conformance.safety import SafetyMonitor

    monitor = SafetyMonitor(("A", "B"), "leader-epoch")
    obs = {"replicas": {"B": {"leo": 2}}}
    monitor.observe({"kind": "produce"}, obs)
    monitor.observe({"kind": "crash", "replica": "B", "unflushed_from": 2}, obs)
    assert monitor.lost_from is None
    monitor.observe({"kind": "crash", "replica": "B", "unflushed_from": 1}, obs)
    assert monitor.lost_from == 1
