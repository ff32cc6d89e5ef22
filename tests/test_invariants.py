"""The reference's fast internal invariants agree with the one definition over observations.

The safety properties are defined once, over observations (``conformance/judging/safety.py``).
``reference_impl/invariants.py`` is the reference's fast internal form of the ones that
have a counterpart; it stays because hypothesis (random runs of every generation, drawn
as ``kconform fuzz`` draws them) finds no run where the two disagree on when an invariant
is first broken. And ``check(after, before)`` (incremental: it reuses what it found on
``before``) equals ``check(after, before, incremental=False)`` on random traces of every
generation (hw-truncation included, where invariants do break).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from helpers import bundled_fixtures
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from reference_traces import random_config, wild_step

from conformance.adapters.wire import wire_step
from conformance.judging.safety import KIP_101, UNCLEAN, SafetyMonitor
from conformance.search.distribution import DataChooser, configs, draw_steps
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
)
from reference_impl.steps import Consume, Crash, Elect, Fetch, Produce, Restart, Tick

PROPERTY_OF = {
    "HwLeLeo": "SAFE-HW-LE-LEO",
    "StrongIsr": "SAFE-STRONG-ISR",
    "AckedNotLost": "SAFE-ACKED",
    "ConsumerBelowHw": "SAFE-CONSUMER-BELOW-HW",
    "OneLeaderPerEpoch": "SAFE-ONE-LEADER",
    "EpochCacheMonotonic": "SAFE-EPOCH-CACHE",
    "LeaderHwMonotonic": "SAFE-LEADER-HW-MONOTONIC",
    "EpochsIncrease": "SAFE-EPOCHS-INCREASE",
}
"""Each invariant of the fast form and the property over observations it must agree with."""


def _first_breaks(data: st.DataObject, config: Config, max_steps: int) -> tuple[dict[str, int], dict[str, int], int]:
    """Walk a random run; per property, the number of the step where the fast form first
    reports it broken, and where the observation-level definition does (its findings, and
    what it excused only under hw-truncation, as KIP-101's loss or as what an unclean
    election leaves diverging, which the fast form does not excuse). SAFE-ACKED is compared
    only before any unclean election or power failure: the fast form then gives the
    guarantee up wholesale, the definition only for what was lost.
    SAFE-CONSUMER-BELOW-HW only at a consume step: the fast form keeps reporting the last
    consume. Also returns how many steps were compared."""
    chooser = DataChooser(data.draw)
    state = initial_state(config)
    monitor = SafetyMonitor(config)
    fast: dict[str, int] = {}
    defined: dict[str, int] = {}
    produced = number = 0

    def compare(after: State, before: State | None, do: dict[str, Any]) -> None:
        waived = len(monitor.waived)
        found = {f.property for f in monitor.observe(do, observe(after))}
        found |= {f.property for f, why in monitor.waived[waived:] if why in (KIP_101, UNCLEAN)}
        broken = {PROPERTY_OF[v.invariant] for v in check(after, before)}
        skip = set() if do.get("kind") == "consume" else {"SAFE-CONSUMER-BELOW-HW"}
        if after.unclean_elections or after.power_failures:
            skip.add("SAFE-ACKED")
        for pid in set(PROPERTY_OF.values()) - skip:
            if pid in broken:
                fast.setdefault(pid, number)
            if pid in found:
                defined.setdefault(pid, number)

    compare(state, None, {})
    for _ in range(data.draw(st.integers(0, max_steps), label="length")):
        batch = draw_steps(chooser, state, refused=False)
        if not batch:
            break
        for step in batch:
            before = state
            try:
                state = apply(state, step)
            except StepRejected:
                continue
            do = wire_step(step, produced)
            produced += do["kind"] == "produce"
            number += 1
            compare(state, before, do)
    return fast, defined, number


@pytest.mark.parametrize("generation", list(Generation), ids=str)
@settings(max_examples=max(60, settings().max_examples), deadline=None)
@given(data=st.data())
def test_the_fast_invariants_agree_with_the_properties_over_observations(
    generation: Generation, data: st.DataObject
) -> None:
    config = data.draw(configs(generation), label="config")
    fast, defined, _ = _first_breaks(data, config, max_steps=40)
    assert fast == defined


def test_the_agreement_is_tested_where_invariants_break() -> None:
    """Under hw-truncation the two forms are compared on runs that do break StrongIsr or
    AckedNotLost (KIP-101), not only on runs where both are silent."""
    broken: list[dict[str, int]] = []

    @settings(max_examples=1500, derandomize=True, database=None, deadline=None, phases=[Phase.generate])
    @given(data=st.data())
    def search(data: st.DataObject) -> None:
        fast, defined, _ = _first_breaks(data, data.draw(configs(Generation.HW_TRUNCATION)), max_steps=40)
        assert fast == defined
        if fast:
            broken.append(fast)

    search()
    assert any({"SAFE-STRONG-ISR", "SAFE-ACKED"} & set(found) for found in broken)


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
    from reference_impl.steps import DeliverFetch

    steps = [Produce(("v1", "v2")), Fetch("B"), DeliverFetch("B"), Fetch("B"), Crash("B", unflushed_from=1)]
    for power_failure in (False, True):
        state = initial_state(Config(replicas=("A", "B")))
        monitor = SafetyMonitor(Config(replicas=("A", "B")))
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
    ("member_log", "lost_from", "generation", "found"),
    [
        (["a", "x", "y"], 1, "leader-epoch", False),  # other records from the lost offset on: allowed
        (["a", "b", "y"], 1, "diverging-epoch", False),
        (["a", "b", "y"], 1, "hw-truncation", False),  # ... or keeps them: KIP-101 scenario 2
        (["a", "x", "y"], 2, "leader-epoch", True),  # a different record below the lost offset
        (["x", "b", "c"], 1, "leader-epoch", True),
        (["a"], 2, "leader-epoch", False),  # lacks records (a prefix): allowed after any power failure
        (["a"], 2, "hw-truncation", False),
        (["a"], None, "leader-epoch", True),  # ... and only after one
        (["a", "x", "y"], None, "leader-epoch", True),  # no power failure: any difference below the HW
        (["a", "b", "c"], None, "leader-epoch", False),
    ],
)
def test_safe_strong_isr_after_a_power_failure(
    member_log: list[str], lost_from: int | None, generation: str, found: bool
) -> None:
    """SAFE-STRONG-ISR over observations: after a power failure an ISR member may lack
    records, or hold others from the lowest offset lost on (epoch truncation removes them
    later; under hw-truncation it is KIP-101's divergence); below it, never."""

    def rep(role: str, log: list[str], hw: int) -> dict[str, object]:
        return {"online": True, "role": role, "leader_epoch": 1, "hw": hw, "leo": len(log), "log": log}

    obs = {
        "leader": "A",
        "leader_epoch": 1,
        "isr": ["A", "B"],
        "replicas": {"A": rep("leader", ["a", "b", "c"], 3), "B": rep("follower", member_log, 0)},
    }
    monitor = SafetyMonitor(Config(replicas=("A", "B"), generation=Generation(generation)))
    monitor.lost_from = lost_from
    findings = [f.property for f in monitor.observe({"kind": "tick"}, obs)]
    assert ("SAFE-STRONG-ISR" in findings) is found


def test_the_monitor_counts_a_power_failure_only_when_records_were_lost() -> None:
    """``crash unflushed_from`` at the LEO loses nothing: SAFE-STRONG-ISR and SAFE-ACKED stay strict."""
    monitor = SafetyMonitor(Config(replicas=("A", "B")))
    obs = {"replicas": {"B": {"leo": 2}}}
    monitor.observe({"kind": "produce"}, obs)
    monitor.observe({"kind": "crash", "replica": "B", "unflushed_from": 2}, obs)
    assert monitor.lost_from is None
    monitor.observe({"kind": "crash", "replica": "B", "unflushed_from": 1}, obs)
    assert monitor.lost_from == 1
