"""Progress, bounded (conformance/judging/progress.py; spec/replication.md, "Progress"): the reference
reaches rest within the bound after any random run in every generation, a follower that
never copies is caught, and what an implementation does not report is said to be unchecked."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import reference_impl
from conformance.adapters.base import Adapter, Description
from conformance.adapters.in_process import FunctionAdapter, ReferenceAdapter, StepRefused
from conformance.implementations.shapes import early_answer, round_only
from conformance.judging.progress import PROPERTIES, FairSuffix, Outcome, describe, drive, goals, round_bound
from conformance.search.distribution import WEIGHTS, DataChooser, RandomChooser, draw_config, draw_steps, swarm
from reference_impl import (
    OBSERVATION_FIELDS,
    REPLICA_FIELDS,
    STEP_TYPES,
    Config,
    Generation,
    State,
    StepRejected,
    apply,
    initial_state,
    observe,
    step_from_dict,
)
from reference_impl.steps import FetchRound, Produce

GENERATIONS = list(Generation)


def random_state(chooser: Any, generation: Generation, steps: int = 30) -> State:
    """A random run on the reference, drawn as ``kconform fuzz`` draws (distribution.py)."""
    state = initial_state(draw_config(chooser, generation))
    weights = swarm(chooser, WEIGHTS)
    for _ in range(steps):
        batch = draw_steps(chooser, state, weights, refused=False)
        if not batch:
            break
        for step in batch:
            state = apply(state, step)
    return state


def suffix_on_reference(state: State) -> Outcome:
    """The fair suffix from ``state``, driven through the reference's adapter."""
    adapter = ReferenceAdapter()
    adapter.state = state
    return drive(adapter.step, FairSuffix(state.config, STEP_TYPES), observe(state))


@pytest.mark.parametrize("generation", GENERATIONS, ids=lambda g: g.value)
def test_the_reference_makes_progress_after_random_runs(generation: Generation) -> None:
    """Seeded: the same 200 runs every time (benchmarks/bench_progress.py runs 10,000)."""
    rng = random.Random(f"progress-{generation.value}")
    longest = 0
    for _ in range(200):
        state = random_state(RandomChooser(rng), generation)
        outcome = suffix_on_reference(state)
        assert outcome.findings == (), (state.config, outcome.findings)
        assert outcome.unchecked == {}
        assert outcome.rounds <= outcome.bound
        longest = max(longest, outcome.rounds)
    assert longest >= 3  # the runs are not all at rest already


@pytest.mark.parametrize("generation", GENERATIONS, ids=lambda g: g.value)
@given(data=st.data())
def test_the_reference_makes_progress_on_shrinkable_runs(generation: Generation, data: Any) -> None:
    state = random_state(DataChooser(data.draw), generation, steps=20)
    outcome = suffix_on_reference(state)
    assert outcome.findings == ()


def test_the_reference_makes_progress_from_the_end_of_every_fixture() -> None:
    from helpers import bundled_fixtures

    for fixture in bundled_fixtures():
        state = fixture.start()
        for fs in fixture.steps:
            try:
                state = apply(state, fs.step)
            except StepRejected:
                continue
        outcome = suffix_on_reference(state)
        assert outcome.findings == (), (fixture.id, outcome.findings)


# --- a follower that never copies ----------------------------------------------------------


def never_copying(victim: str) -> FunctionAdapter:
    """The reference, except that follower ``victim``'s fetches change nothing: every fetch
    is answered empty (the issue's broker that passes every level)."""

    def step(state: State, data: dict[str, Any]) -> State:
        parsed = step_from_dict(data)
        if parsed.kind in ("fetch", "fetch_round", "deliver_fetch") and getattr(parsed, "replica", None) == victim:
            return state
        try:
            return apply(state, parsed)
        except StepRejected as exc:
            raise StepRefused(exc.reason, exc.rule) from None

    return FunctionAdapter(
        Description(
            "never-copies",
            "0",
            tuple(g.value for g in Generation),
            tuple(STEP_TYPES),
            OBSERVATION_FIELDS,
            REPLICA_FIELDS,
        ),
        init=lambda config: initial_state(reference_impl.config_from_dict(config)),
        apply=step,
        observe=observe,
    )


def run_prefix(adapter: Adapter, config: Config, steps: list[dict[str, Any]]) -> dict[str, Any]:
    adapter.reset(config.to_dict())
    last = observe(initial_state(config))
    for data in steps:
        result = adapter.step(data)
        if result.observation is not None:
            last = result.observation
    return last


@pytest.mark.parametrize("generation", GENERATIONS, ids=lambda g: g.value)
@pytest.mark.parametrize("lag", [30000, 200])
def test_a_follower_that_never_copies_fails(generation: Generation, lag: int) -> None:
    """With a long lag time B stays in the ISR, behind, and holds the HW; with a short one
    the leader drops it from the ISR and the HW moves, but B neither catches up nor rejoins."""
    config = Config(replicas=("A", "B", "C"), generation=generation, replica_lag_time_max_ms=lag)
    prefix = [{"kind": "produce", "values": ["m0"], "acks": "all"}, {"kind": "produce", "values": ["m1"], "acks": "1"}]
    adapter = never_copying("B")
    last = run_prefix(adapter, config, prefix)
    outcome = drive(adapter.step, FairSuffix(config, adapter.describe().steps), last)
    found = {f.property: f.detail for f in outcome.findings}
    assert "PROGRESS-ISR-CATCH-UP" in found and "B leo 0" in found["PROGRESS-ISR-CATCH-UP"], found
    if lag == 30000:
        assert "PROGRESS-HW" in found and "hw 0, leo 2" in found["PROGRESS-HW"]
    else:
        assert "PROGRESS-ISR-JOIN" in found and "B" in found["PROGRESS-ISR-JOIN"]
    assert outcome.rounds == outcome.bound == round_bound(3, 0) + 2  # + 2: B starts 2 records behind (CHOICE-4)
    assert f"(after {outcome.bound} of {outcome.bound} rounds)" in describe(outcome)
    # the reference, on the same prefix, reaches rest
    reference = ReferenceAdapter()
    last = run_prefix(reference, config, prefix)
    assert drive(reference.step, FairSuffix(config, STEP_TYPES), last).findings == ()


def test_the_defect_is_found_after_random_runs() -> None:
    """Random prefixes replayed on the defective broker: whenever B ends alive, following a
    live leader with more records than B, the suffix reports B."""
    rng = random.Random("never-copies")
    found = 0
    for n in range(90):
        generation = GENERATIONS[n % 3]
        chooser = RandomChooser(rng)
        state = initial_state(draw_config(chooser, generation, sizes=(2, 3)))
        steps = []
        for _ in range(25):
            batch = draw_steps(chooser, state, refused=False)
            for step in batch:
                state = apply(state, step)
                steps.append(reference_impl.step_to_dict(step))
        adapter = never_copying("B")
        last = run_prefix(adapter, state.config, steps)
        outcome = drive(adapter.step, FairSuffix(state.config, STEP_TYPES), last)
        end = outcome.last
        leader = end.get("leader")
        if leader in (None, "B") or not end["replicas"]["B"]["online"] or not end["replicas"][leader]["online"]:
            continue
        if end["replicas"][leader]["leo"] > end["replicas"]["B"]["leo"]:
            found += 1
            assert any("B" in f.detail for f in outcome.findings), outcome
    assert found > 10


# --- what the driver sends, and what it cannot check ----------------------------------------


@pytest.mark.parametrize("make", [round_only, early_answer], ids=["round-only", "early-answer"])
def test_other_shapes_make_progress_with_their_own_steps(make: Any) -> None:
    """Driven through the shapes' own adapters: round-only has no deliver_* steps, reports
    no follower HW, no in_flight and no answers; early-answer never parks a fetch."""
    rng = random.Random(f"shapes-{make.__name__}")
    for n in range(45):
        adapter = make()
        kinds = adapter.describe().steps
        generation = GENERATIONS[n % 3]
        config = draw_config(RandomChooser(rng), generation, sizes=(2, 3))
        menu = [
            {"kind": "produce", "values": ["v"], "acks": "all"},
            {"kind": "produce", "values": ["v"], "acks": "1"},
            {"kind": "tick", "ms": config.replica_fetch_wait_max_ms},
            {"kind": "elect"},
        ]
        for r in config.replicas:
            menu += [{"kind": k, "replica": r} for k in ("fetch_round", "epoch_round", "crash", "restart")]
        prefix = [d for d in (rng.choice(menu) for _ in range(25)) if d["kind"] in kinds]
        last = run_prefix(adapter, config, prefix)
        sent: list[str] = []

        def step(data: dict[str, Any], adapter: Adapter = adapter, sent: list[str] = sent) -> Any:
            sent.append(data["kind"])
            return adapter.step(data)

        suffix = FairSuffix.for_implementation(config, adapter.describe())
        outcome = drive(step, suffix, last)
        assert outcome.findings == (), (config, prefix, outcome.findings)
        assert outcome.unchecked == {}  # judged on every property, not passed for want of fields
        assert set(sent) <= set(kinds)


def test_steps_come_in_the_wire_form() -> None:
    config = Config(replicas=("A", "B"))
    suffix = FairSuffix(config, STEP_TYPES)
    state = apply(initial_state(config), Produce(values=("m0",)))
    first = suffix.next_step(observe(state))
    assert first == {"kind": "fetch_round", "replica": "B", "max_records": None, "max_wait_ms": None}
    assert reference_impl.step_from_dict(first) == FetchRound("B")


def test_fields_not_reported_make_properties_not_checkable() -> None:
    config = Config(replicas=("A", "B"))
    state = apply(initial_state(config), Produce(values=("m0",)))
    suffix = FairSuffix(config, STEP_TYPES, fields=("leader", "isr", "replicas"), replica_fields=("online", "leo"))
    adapter = ReferenceAdapter()
    adapter.state = state
    outcome = drive(adapter.step, suffix, observe(state))
    assert set(outcome.unchecked) == {"PROGRESS-HW", "PROGRESS-ACKS"}
    assert "field replicas.hw" in suffix.missing() and "field producer" in suffix.missing()
    assert suffix.checked() == ("PROGRESS-LEADER", "PROGRESS-ISR-CATCH-UP", "PROGRESS-ISR-JOIN")


def test_fields_absent_from_the_observations_are_not_checkable_either() -> None:
    config = Config(replicas=("A", "B"))
    suffix = FairSuffix(config, STEP_TYPES)
    obs = observe(initial_state(config))
    del obs["producer"]
    for replica in obs["replicas"].values():
        del replica["hw"]
    suffix.next_step(obs)
    assert set(suffix.unchecked()) == {"PROGRESS-HW", "PROGRESS-ACKS"}


def test_an_implementation_without_a_fetch_or_a_tick_is_not_checkable() -> None:
    config = Config(replicas=("A", "B"))
    suffix = FairSuffix(config, ("produce", "fetch_round"))
    assert suffix.next_step(observe(initial_state(config))) is None
    assert suffix.verdict() == []
    assert all("step tick" in why for why in suffix.unchecked().values())
    assert set(suffix.unchecked()) == set(PROPERTIES)


def test_the_first_call_needs_an_observation() -> None:
    with pytest.raises(ValueError, match="last observation"):
        FairSuffix(Config(), STEP_TYPES).next_step(None)


def test_each_property_names_the_replica_and_the_values() -> None:
    config = Config(replicas=("A", "B", "C"), generation=Generation.LEADER_EPOCH)
    obs = observe(initial_state(config))
    obs["leader"] = None
    assert [f.property for f in goals(config, obs)] == ["PROGRESS-LEADER"]
    assert "A, B, C alive and eligible" in goals(config, obs)[0].detail
    obs = observe(initial_state(config))
    obs["replicas"]["A"].update(leo=3, hw=1)
    obs["replicas"]["B"].update(leo=3, hw=1)
    obs["isr"] = ["A", "B"]
    obs["producer"] = {"p1": "pending"}
    found = {f.property: f.detail for f in goals(config, obs)}
    assert found["PROGRESS-ISR-CATCH-UP"] == "live followers C leo 0; leader A leo 3"
    assert found["PROGRESS-ISR-JOIN"] == "live followers C not in the ISR ['A', 'B']"
    assert found["PROGRESS-HW"] == "leader A hw 1, leo 3 (ISR ['A', 'B'])"
    assert "PROGRESS-ACKS" not in found  # the HW has not passed the records: not acknowledgeable yet
    obs["replicas"]["A"]["hw"] = 3
    found = {f.property: f.detail for f in goals(config, obs)}
    assert found["PROGRESS-ACKS"] == "p1 still pending; leader A hw 3 = leo 3"
    assert found["PROGRESS-HW"] == "ISR followers B hw 1; leader A hw 3"


def test_a_dead_caught_up_follower_outside_the_isr_may_hold_the_hw() -> None:
    """PROGRESS-HW's exemption (HW-LEADER-1 recomputes nothing when time passes)."""
    config = Config(replicas=("A", "B"), generation=Generation.LEADER_EPOCH)
    obs = observe(initial_state(config))
    obs["isr"] = ["A"]
    obs["replicas"]["A"].update(leo=3, hw=1)
    obs["replicas"]["B"].update(online=False)
    assert goals(config, obs) == []
    # HT too: 0.10.2 counts caught-up followers for the HW (KAFKA-4485).
    hw_truncation = Config(replicas=("A", "B"), generation=Generation.HW_TRUNCATION)
    assert goals(hw_truncation, obs) == []
    # A live follower outside the ISR exempts nothing: its fetches recompute the HW.
    obs["replicas"]["B"].update(online=True)
    assert "PROGRESS-HW" in [f.property for f in goals(config, obs)]
