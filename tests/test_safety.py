"""Safety properties over observations: no false alarm on the reference, and each property
catches what it names (and lets through what the spec allows)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from conformance.fixtures import load_fixtures
from conformance.paths import FIXTURES_DIR
from conformance.safety import PROPERTIES, SafetyMonitor
from conformance.wire import wire_step
from reference_impl import Config, Generation, StepRejected, apply, enabled_steps, initial_state, observe

FIXTURES, _ = load_fixtures([FIXTURES_DIR])


def test_the_reference_is_safe_on_every_fixture() -> None:
    for fixture in FIXTURES:
        state = fixture.start()
        monitor = SafetyMonitor(fixture.config.replicas, fixture.generation.value)
        produced = 0
        for fs in fixture.steps:
            try:
                state = apply(state, fs.step)
            except StepRejected:
                continue
            do = wire_step(fs.step, produced)
            produced += do["kind"] == "produce"
            assert monitor.observe(do, observe(state)) == [], (fixture.id, fs.number)


@pytest.mark.parametrize("generation", list(Generation))
def test_the_reference_is_safe_on_random_runs(generation: Generation) -> None:
    """The proof of no false alarms by kconform's own model: many random runs of enabled
    steps (every step kind, crashes, power failures, unclean elections), every property
    after every step. Seeded, so it is the same run every time."""
    rnd = random.Random(f"safety-{generation.value}")
    acked_runs = 0
    for _ in range(100):
        config = Config(
            replicas=rnd.choice([("A", "B"), ("A", "B", "C")]),
            generation=generation,
            min_insync_replicas=rnd.choice([1, 2]),
            unclean_leader_election=rnd.random() < 0.5,
            replica_lag_time_max_ms=rnd.choice([1000, 30000]),
            replica_high_watermark_checkpoint_interval_ms=rnd.choice([0, 5000]),
        )
        state = initial_state(config)
        monitor = SafetyMonitor(config.replicas, generation.value)
        produced = 0
        for _ in range(40):
            step = rnd.choice(enabled_steps(state))
            state = apply(state, step)
            do = wire_step(step, produced)
            produced += do["kind"] == "produce"
            assert monitor.observe(do, observe(state)) == [], (config, do)
        acked_runs += bool(monitor.committed)
    assert acked_runs > 15  # the acknowledged-writes property really had records to protect


def _obs(**replicas: dict[str, Any]) -> dict[str, Any]:
    base = {"online": True, "role": "follower", "leader": "A", "leader_epoch": 0, "leo": 0, "hw": 0, "log": []}
    reps = {name: {**base, **fields} for name, fields in replicas.items()}
    return {"leader": "A", "leader_epoch": 0, "isr": ["A", "B"], "replicas": reps, "producer": {}}


def _props(findings: list[Any]) -> set[str]:
    return {f.property for f in findings}


def test_each_property_names_what_it_catches() -> None:
    m = SafetyMonitor(("A", "B"), "leader-epoch")
    leader = {"role": "leader", "leo": 2, "hw": 2, "log": ["a@0", "b@0"]}
    assert m.observe({"kind": "tick"}, _obs(A=leader, B={"leo": 2, "log": ["a@0", "b@0"], "hw": 2})) == []
    found = m.observe({"kind": "tick"}, _obs(A={**leader, "hw": 1}, B={"leo": 2, "log": ["a@0", "b@0"], "hw": 3}))
    assert _props(found) == {"SAFE-LEADER-HW-MONOTONIC", "SAFE-HW-LE-LEO"}
    bad = _obs(A=leader, B={"role": "leader", "leo": 1, "log": ["x@0"]})
    assert {"SAFE-ONE-LEADER", "SAFE-STRONG-ISR"} <= _props(SafetyMonitor(("A", "B"), "leader-epoch").observe({}, bad))
    consumed = {
        **_obs(A=leader, B={"leo": 2, "log": ["a@0", "b@0"]}),
        "consumer": {"offset": 1, "records": ["b@0", "c@0"]},
    }
    assert "SAFE-CONSUMER-BELOW-HW" in _props(
        SafetyMonitor(("A", "B"), "leader-epoch").observe({"kind": "consume"}, consumed)
    )
    assert set(PROPERTIES) >= {"SAFE-ACKED", "SAFE-EPOCHS-INCREASE", "SAFE-EPOCH-CACHE", "SAFE-LOG-LEO"}


def test_acknowledged_records_are_protected_unless_the_spec_gives_the_guarantee_up() -> None:
    def run(elect_leader_in_isr: bool) -> set[str]:
        m = SafetyMonitor(("A", "B"), "leader-epoch")
        empty = {"role": "leader", "leo": 0, "hw": 0, "log": []}
        m.observe({"kind": "tick"}, _obs(A=empty, B={}))
        one = {"role": "leader", "leo": 1, "hw": 1, "log": ["a@0"]}
        acked = {**_obs(A=one, B={"leo": 1, "hw": 1, "log": ["a@0"]}), "producer": {"p1": "acked"}}
        m.observe({"kind": "produce", "values": ["a"], "acks": "all", "id": "p1"}, acked)
        lost = _obs(A={"online": False, "role": "none"}, B={"role": "leader", "leader_epoch": 1, "leo": 0, "log": []})
        lost.update(leader="B", leader_epoch=1, isr=["B"], producer={"p1": "acked"})
        if not elect_leader_in_isr:
            m.previous = {**(m.previous or {}), "isr": ["A"]}  # B was not in the ISR: an unclean election
        lost["replicas"]["B"]["leader"] = "B"
        return _props(m.observe({"kind": "elect"}, lost))

    assert "SAFE-ACKED" in run(elect_leader_in_isr=True)
    assert "SAFE-ACKED" not in run(elect_leader_in_isr=False)


def test_a_new_epoch_may_lower_the_hw() -> None:
    m = SafetyMonitor(("A", "B"), "leader-epoch")
    m.observe(
        {}, _obs(A={"role": "leader", "leo": 2, "hw": 2, "log": ["a@0", "b@0"]}, B={"leo": 2, "log": ["a@0", "b@0"]})
    )
    again = _obs(
        A={"role": "leader", "leader_epoch": 1, "leo": 2, "hw": 1, "log": ["a@0", "b@0"]},
        B={"leader_epoch": 1, "leo": 2, "log": ["a@0", "b@0"]},
    )
    again["leader_epoch"] = 1
    assert m.observe({"kind": "elect"}, again) == []


def test_every_property_is_specified() -> None:
    import re

    from conformance.paths import SCHEMA_DIR as SPEC_DIR

    spec = (SPEC_DIR / "replication.md").read_text(encoding="utf-8")
    assert set(re.findall(r"^- \*\*(SAFE-[A-Z-]+)\*\*", spec, flags=re.M)) == set(PROPERTIES)
