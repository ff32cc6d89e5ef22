"""Safety properties over observations: no false alarm on the reference, each property
catches what it names (and lets through only what the spec waives), and the certificate
refuses an implementation that shows too little to check."""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from typing import Any

import pytest
from helpers import bundled_fixtures

import reference_impl
from conformance.adapters.base import Adapter, Description
from conformance.adapters.in_process import FunctionAdapter, ReferenceAdapter, StepRefused
from conformance.adapters.wire import wire_step
from conformance.fixtures.loading import Fixture
from conformance.fixtures.paths import SCHEMA_DIR
from conformance.implementations.registry import resolve
from conformance.judging.safety import (
    KAFKA_7128,
    KIP_101,
    PROPERTIES,
    Coverage,
    Finding,
    Property,
    SafetyMonitor,
    certificate,
)
from conformance.search.distribution import RandomChooser, draw_config, draw_steps
from reference_impl import Config, Generation, StepRejected, apply, initial_state, observe
from reference_impl.steps import Crash, DeliverFetch, Elect, Fetch, Produce, Restart, Step

ALL_STEPS = tuple(reference_impl.STEP_TYPES)


def _run(fixture: Fixture, monitor: SafetyMonitor) -> list[tuple[int, Finding]]:
    """The reference on ``fixture``, every accepted step's observation through ``monitor``."""
    state = fixture.start()
    produced = 0
    found = []
    for fs in fixture.steps:
        try:
            state = apply(state, fs.step)
        except StepRejected:
            monitor.refused(wire_step(fs.step, produced))
            continue
        do = wire_step(fs.step, produced)
        produced += do["kind"] == "produce"
        found += [(fs.number, f) for f in monitor.observe(do, observe(state))]
    return found


def test_the_reference_is_safe_on_every_fixture_and_certified() -> None:
    coverages = []
    for fixture in bundled_fixtures():
        monitor = SafetyMonitor(fixture.config)
        assert _run(fixture, monitor) == [], fixture.id
        coverages.append(monitor.coverage())
    established, reason = certificate(coverages)
    assert established, reason
    # every property was evaluated on data, the optional one too
    assert all(sum(c[pid].checked for c in coverages) for pid in PROPERTIES)


@pytest.mark.parametrize("generation", list(Generation), ids=str)
def test_the_reference_is_safe_on_random_runs(generation: Generation) -> None:
    """The proof of no false alarms by kconform's own model: random runs drawn as
    ``kconform fuzz`` draws them (every step kind, crashes, power failures, unclean
    elections, every config knob), every property after every step. Seeded."""
    chooser = RandomChooser(random.Random(f"safety-{generation.value}"))
    checked = dict.fromkeys(PROPERTIES, 0)
    for _ in range(120):
        config = draw_config(chooser, generation)
        state = initial_state(config)
        monitor = SafetyMonitor(config)
        produced = 0
        for _ in range(40):
            for step in draw_steps(chooser, state):
                try:
                    state = apply(state, step)
                except StepRejected:
                    continue
                do = wire_step(step, produced)
                produced += do["kind"] == "produce"
                assert monitor.observe(do, observe(state)) == [], (config, do)
        for pid, c in monitor.coverage().items():
            checked[pid] += c.checked
    required = {pid for pid, p in PROPERTIES.items() if p.required}
    assert all(checked[pid] for pid in required), checked  # each really had something to check


# --- single properties on hand-made observations ---------------------------------------------


def _obs(**replicas: dict[str, Any]) -> dict[str, Any]:
    base = {"online": True, "role": "follower", "leader": "A", "leader_epoch": 0, "leo": 0, "hw": 0, "log": []}
    reps = {name: {**base, **fields} for name, fields in replicas.items()}
    return {"leader": "A", "leader_epoch": 0, "isr": ["A", "B"], "replicas": reps, "producer": {}}


def _props(findings: Iterable[Finding]) -> set[str]:
    return {f.property for f in findings}


def _monitor(**config: Any) -> SafetyMonitor:
    return SafetyMonitor(Config(replicas=("A", "B"), **config))


def test_each_property_names_what_it_catches() -> None:
    m = _monitor()
    leader = {"role": "leader", "leo": 2, "hw": 2, "log": ["a@0", "b@0"]}
    assert m.observe({"kind": "tick"}, _obs(A=leader, B={"leo": 2, "log": ["a@0", "b@0"], "hw": 2})) == []
    found = m.observe({"kind": "tick"}, _obs(A={**leader, "hw": 1}, B={"leo": 2, "log": ["a@0", "b@0"], "hw": 3}))
    assert _props(found) == {"SAFE-LEADER-HW-MONOTONIC", "SAFE-HW-LE-LEO"}
    bad = _obs(A=leader, B={"role": "leader", "leo": 1, "log": ["x@0"]})
    assert {"SAFE-ONE-LEADER", "SAFE-STRONG-ISR"} <= _props(_monitor().observe({}, bad))
    consumed = {
        **_obs(A=leader, B={"leo": 2, "log": ["a@0", "b@0"]}),
        "consumer": {"offset": 1, "records": ["b@0", "c@0"]},
    }
    assert "SAFE-CONSUMER-BELOW-HW" in _props(_monitor().observe({"kind": "consume"}, consumed))
    assert "SAFE-LOG-LEO" in _props(_monitor().observe({}, _obs(A={**leader, "log": ["a@0"]})))
    cache = _obs(A={**leader, "epoch_cache": [[0, 0], [0, 1]]})
    assert "SAFE-EPOCH-CACHE" in _props(_monitor().observe({}, cache))
    m = _monitor()
    m.observe({}, {**_obs(A=leader), "leader_epoch": 2})
    assert "SAFE-EPOCHS-INCREASE" in _props(m.observe({}, {**_obs(A=leader), "leader_epoch": 1}))


def _epochs(monitor: SafetyMonitor, *epochs: int) -> list[set[str]]:
    """Feed ``monitor`` one observation per epoch B reports (A leads epoch 5 throughout, so
    only B's epoch moves); the properties each step broke."""
    leader = {"role": "leader", "leader_epoch": 5}
    out = []
    for epoch in epochs:
        obs = {**_obs(A=leader, B={"role": "none", "leader": None, "leader_epoch": epoch}), "leader_epoch": 5}
        out.append(_props(monitor.observe({"kind": "tick"}, obs)) & {"SAFE-EPOCHS-INCREASE"})
    return out


@pytest.mark.parametrize("shared", [False, True])
def test_an_unknown_epoch_is_not_an_epoch_going_back_but_a_regression_through_it_is(shared: bool) -> None:
    """SAFE-EPOCHS-INCREASE compares known epochs: -1 (a ZooKeeper broker restarted into a
    leaderless partition knows none, RESTART-1) passes, and the epoch known before it still
    counts, so the property keeps catching a real regression."""
    found = {"SAFE-EPOCHS-INCREASE"}

    def monitor() -> SafetyMonitor:
        return SafetyMonitor(Config(replicas=("A", "B")), shared=shared)

    assert _epochs(monitor(), 3, -1, -1, 4) == [set(), set(), set(), set()]
    assert _epochs(monitor(), -1, 0, 2) == [set(), set(), set()]
    assert _epochs(monitor(), 3, 2) == [set(), found]
    assert _epochs(monitor(), 3, -1, 2) == [set(), set(), found]
    assert _epochs(monitor(), 3, -1, 4, -1, 3) == [set(), set(), set(), set(), found]
    assert _epochs(monitor(), 0, -2) == [set(), found]  # only -1 means "no epoch"
    m = monitor()
    _epochs(m, 3, -1)
    leader = {"role": "leader", "leader_epoch": 5}
    obs = {**_obs(A=leader, B={"role": "none", "leader": None, "leader_epoch": 2}), "leader_epoch": 5}
    (finding,) = m.observe({"kind": "tick"}, obs)
    assert finding.property == "SAFE-EPOCHS-INCREASE" and "below the epoch 3 it knew before" in finding.detail


def test_properties_are_frozen_values_with_their_text() -> None:
    prop = PROPERTIES["SAFE-STRONG-ISR"]
    assert isinstance(prop, Property) and str(prop) == prop.text
    assert {"online", "role", "log", "hw"} <= prop.replica_fields and {"leader", "isr"} <= prop.fields
    assert PROPERTIES["SAFE-CONSUMER-BELOW-HW"].steps == {"consume"}
    assert "hw-truncation" not in PROPERTIES["SAFE-EPOCH-CACHE"].generations
    with pytest.raises(AttributeError):
        prop.text = "anything"  # type: ignore[misc]


def _produce(m: SafetyMonitor, acks: str = "all", isr: list[str] | None = None, hw: int = 1) -> list[Finding]:
    """An empty leader A, then a produce of ``a`` that is acknowledged in the same step."""
    empty = {"role": "leader", "leo": 0, "hw": 0, "log": []}
    m.observe({"kind": "tick"}, {**_obs(A=empty, B={}), "isr": isr or ["A", "B"]})
    one = {"role": "leader", "leo": 1, "hw": hw, "log": ["a@0"]}
    acked = {**_obs(A=one, B={"leo": 1, "hw": 1, "log": ["a@0"]}), "producer": {"p1": "acked"}}
    acked["isr"] = isr or ["A", "B"]
    return m.observe({"kind": "produce", "values": ["a"], "acks": acks, "id": "p1"}, acked)


def test_an_acks_all_produce_is_acknowledged_only_when_committed_with_enough_isr() -> None:
    assert _produce(_monitor()) == []
    assert _props(_produce(_monitor(), hw=0)) == {"SAFE-ACK-COMMITTED"}
    assert _props(_produce(_monitor(min_insync_replicas=2), isr=["A"])) == {"SAFE-ACK-MIN-ISR"}
    assert _produce(_monitor(min_insync_replicas=2), isr=["A"], acks="1") == []  # acks=1 is not held to it


def test_min_isr_is_not_judged_on_a_leader_of_an_older_epoch() -> None:
    """A leader whose new LeaderAndIsr has not arrived counts the ISR of the epoch it led
    (PRODUCE-2), which the observation does not show: its ack is not judged against the
    controller's ISR; the same ack by a current leader still is."""

    def ack(leader_epoch: int) -> set[str]:
        m = _monitor(min_insync_replicas=2)
        empty = {"role": "leader", "leo": 0, "hw": 0, "log": [], "leader_epoch": 1}
        m.observe({"kind": "tick"}, {**_obs(A=empty, B={}), "isr": ["A"], "leader_epoch": 1})
        one = {"role": "leader", "leo": 1, "hw": 1, "log": ["a@1"], "leader_epoch": leader_epoch}
        acked = {**_obs(A=one, B={"leo": 1, "hw": 1, "log": ["a@1"]}), "producer": {"p1": "acked"}}
        acked.update(isr=["A"], leader_epoch=2)
        return _props(m.observe({"kind": "produce", "values": ["a"], "acks": "all", "id": "p1"}, acked))

    assert ack(leader_epoch=1) == set()
    assert ack(leader_epoch=2) == {"SAFE-ACK-MIN-ISR"}


def _elect_b(m: SafetyMonitor, isr_before: list[str], b_log: list[str], a_online: bool = False) -> set[str]:
    """``a`` acknowledged at offset 0; then A goes down (or not) and B is elected."""
    _produce(m)
    m.previous = {**(m.previous or {}), "isr": isr_before}
    m.previous["replicas"]["A"]["online"] = a_online
    after = _obs(
        A={"online": a_online, "role": "none" if not a_online else "follower", "leo": 1, "log": ["a@0"]},
        B={"role": "leader", "leader": "B", "leader_epoch": 1, "leo": len(b_log), "log": b_log},
    )
    after.update(leader="B", leader_epoch=1, isr=["B"], producer={"p1": "acked"})
    return _props(m.observe({"kind": "elect", "leader": None}, after))


def test_an_election_from_outside_the_isr_is_allowed_only_by_the_config() -> None:
    assert _elect_b(_monitor(), ["A", "B"], []) == {"SAFE-ACKED"}  # clean election, record lost
    assert _elect_b(_monitor(), ["A"], []) == {"SAFE-LEADER-IN-ISR", "SAFE-ACKED"}  # unclean, disabled
    assert _elect_b(_monitor(unclean_leader_election=True), ["A"], []) == set()  # allowed: gives up "a"
    # allowed, but an ISR member was live: Kafka elects it (CTRL-ELECT-1)
    assert "SAFE-LEADER-IN-ISR" in _elect_b(_monitor(unclean_leader_election=True), ["A"], [], a_online=True)
    # a controlled election names an ISR member whatever the config
    m = _monitor(unclean_leader_election=True)
    _produce(m)
    m.previous = {**(m.previous or {}), "isr": ["A"]}
    after = {**_obs(A={}, B={"role": "leader", "leo": 1, "log": ["a@0"]}), "leader": "B", "leader_epoch": 1}
    assert "SAFE-LEADER-IN-ISR" in _props(m.observe({"kind": "elect", "leader": "B"}, after))


def test_an_allowed_unclean_election_waives_only_what_its_leader_lacks() -> None:
    m = _monitor(unclean_leader_election=True)
    assert _elect_b(m, ["A"], ["a@0"]) == set()
    assert m.committed == {0: "a@0"}  # B holds it: still protected
    lost = _obs(A={"online": False, "role": "none"}, B={"role": "leader", "leader_epoch": 1, "leo": 1, "log": ["x@1"]})
    lost.update(leader="B", leader_epoch=1, isr=["B"])
    assert _props(m.observe({"kind": "tick"}, lost)) == {"SAFE-ACKED"}


def test_a_power_failure_waives_from_the_lowest_offset_it_lost_and_only_if_it_lost_something() -> None:
    def run(unflushed_from: int) -> set[str]:
        m = _monitor()
        _produce(m)
        m.observe({"kind": "crash", "replica": "B", "unflushed_from": unflushed_from}, m.previous or {})
        # B restarts, A goes down, B is elected (cleanly) and shows an empty log
        gone = _obs(A={"online": False, "role": "none"}, B={"role": "leader", "leader_epoch": 1})
        gone.update(leader="B", leader_epoch=1, isr=["B"])
        return _props(m.observe({"kind": "elect"}, gone))

    assert run(unflushed_from=1) == {"SAFE-ACKED"}  # B's LEO was 1: nothing lost, nothing waived
    assert run(unflushed_from=0) == set()  # B lost "a": gone with it


def test_a_new_epoch_may_lower_the_hw() -> None:
    m = _monitor()
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
    spec = (SCHEMA_DIR / "replication.md").read_text(encoding="utf-8")
    section = spec[spec.index("### Safety properties over observations") :]
    section = section[: section.index("\n## ")]
    assert set(re.findall(r"^- \*\*(SAFE-[A-Z-]+)\*\*", section, flags=re.M)) == set(PROPERTIES)
    for pid, prop in PROPERTIES.items():  # each names the fields it needs as the code does
        entry = section[section.index(f"**{pid}**") :].split("\n- **", 1)[0]
        needs = re.search(r"Needs: ([^.]*)\.", entry.replace("\n", " "))
        assert needs, pid
        named = set(re.findall(r"`([a-z_]+)`", needs.group(1)))
        assert named == prop.fields | prop.replica_fields, pid


# --- the certificate: an implementation that shows nothing proves nothing ------------------


def _drive(adapter: Adapter, fixtures: Iterable[Fixture]) -> tuple[list[dict[str, Coverage]], list[Finding]]:
    """Every fixture (without a given initial state) on ``adapter``, each observation
    through a monitor told what the adapter declares: the coverages and the findings."""
    d = adapter.describe()
    coverages, found = [], []
    for fixture in fixtures:
        if fixture.initial is not None or fixture.generation.value not in d.generations:
            continue
        adapter.reset(fixture.config.to_dict())
        monitor = SafetyMonitor(fixture.config, d.field_set, d.replica_field_set, frozenset(d.steps))
        produced = 0
        for fs in fixture.steps:
            do = wire_step(fs.step, produced)
            answer = adapter.step(do)
            if answer.rejected is not None:
                monitor.refused(do)
                continue
            produced += do["kind"] == "produce"
            found += monitor.observe(do, answer.observation or {})
        coverages.append(monitor.coverage())
    return coverages, found


def _description(fields: Iterable[str], replica_fields: Iterable[str]) -> Description:
    generations = tuple(g.value for g in Generation)
    return Description("test", "0", generations, tuple(ALL_STEPS), tuple(fields), tuple(replica_fields))


def _reference_init(config: dict[str, Any]) -> reference_impl.State:
    return initial_state(reference_impl.config_from_dict(config))


def _reference_apply(state: reference_impl.State, step: dict[str, Any]) -> reference_impl.State:
    try:
        return apply(state, reference_impl.step_from_dict(step))
    except StepRejected as exc:
        raise StepRefused(exc.reason, exc.rule) from None


def _refuse(state: Any, step: dict[str, Any]) -> Any:
    raise StepRefused("no")


EVERYTHING = _description(reference_impl.OBSERVATION_FIELDS, reference_impl.REPLICA_FIELDS)

MINIMAL_FIELDS = ("leader", "isr", "replicas", "producer")


def _minimal(extra: tuple[str, ...] = ()) -> FunctionAdapter:
    """A broker reporting only ``leader, isr, replicas{leo, hw, log}, producer`` (and
    ``extra`` replica fields) whose leader moves its HW to its LEO on every append."""

    def step(state: tuple[reference_impl.State, bool], do: dict[str, Any]) -> tuple[reference_impl.State, bool]:
        return _reference_apply(state[0], do), do["kind"] == "produce" or state[1]

    def show(state: tuple[reference_impl.State, bool]) -> dict[str, Any]:
        full = observe(state[0])
        keep = ("leo", "hw", "log", *extra)
        out = {k: full[k] for k in MINIMAL_FIELDS}
        out["replicas"] = {n: {f: r[f] for f in keep} for n, r in full["replicas"].items()}
        leader = out["replicas"].get(full["leader"])
        if state[1] and leader is not None:
            leader["hw"] = leader["leo"]  # the defect: the HW is the LEO once anything was appended
        return out

    return FunctionAdapter(
        _description(MINIMAL_FIELDS, ("leo", "hw", "log", *extra)),
        lambda config: (_reference_init(config), False),
        step,
        show,
    )


def test_the_reference_adapter_gets_the_certificate() -> None:
    coverages, found = _drive(ReferenceAdapter(), bundled_fixtures())
    assert found == []
    assert certificate(coverages)[0]


def test_an_implementation_refusing_every_step_proves_nothing() -> None:
    adapter = FunctionAdapter(EVERYTHING, _reference_init, _refuse, observe)
    coverages, found = _drive(adapter, bundled_fixtures())
    established, reason = certificate(coverages)
    assert found == [] and not established
    assert "SAFE-STRONG-ISR never checked" in reason and "SAFE-ACKED never checked" in reason


def test_an_implementation_reporting_empty_observations_proves_nothing() -> None:
    adapter = FunctionAdapter(EVERYTHING, _reference_init, _reference_apply, lambda state: {})
    coverages, found = _drive(adapter, bundled_fixtures())
    established, reason = certificate(coverages)
    assert found == [] and not established
    assert "SAFE-STRONG-ISR not checkable (missing fields: isr, leader, replicas; missing replica fields:" in reason


def test_a_broker_reporting_few_fields_is_not_certified_and_with_roles_is_caught() -> None:
    coverages, found = _drive(_minimal(), bundled_fixtures())
    established, reason = certificate(coverages)
    assert not established
    assert "SAFE-STRONG-ISR not checkable (missing replica fields: online, role)" in reason
    assert "SAFE-ACKED not checkable (missing replica fields: online, role)" in reason
    # the same broker reporting online, role and leader_epoch: its HW defect is caught at once
    _, found = _drive(_minimal(("online", "role", "leader_epoch")), bundled_fixtures())
    assert "SAFE-STRONG-ISR" in _props(found)


def test_the_certificate_names_properties_never_exercised() -> None:
    m = SafetyMonitor(Config(), steps=frozenset({"produce", "tick"}))
    coverage = m.coverage()
    assert not coverage["SAFE-LEADER-IN-ISR"].applicable  # it cannot elect
    assert not coverage["SAFE-CONSUMER-BELOW-HW"].applicable  # it cannot consume
    established, reason = certificate([coverage])
    assert not established and "SAFE-LEADER-IN-ISR" not in reason
    assert "SAFE-ACKED never checked (no acks=all produce was acknowledged)" in reason
    assert certificate([]) == (False, "safety not established: no run")


def test_a_run_without_a_leader_reports_the_field_and_blocks_no_certificate() -> None:
    """``leader: null`` is a state (no leader), not a missing field: a run without a leader
    (both brokers crashed, an election with no one eligible) leaves SAFE-CONSUMER-BELOW-HW unchecked, not "not
    checkable". With the reference having checked it nowhere on the same runs it is idle; a
    fuzz of the reference once failed its own certificate here."""
    config = Config(replicas=("A", "B"))
    state = initial_state(config)
    for step in (Crash(replica="B"), Crash(replica="A"), Elect()):  # no eligible replica: no leader
        state = apply(state, step)
    assert observe(state)["leader"] is None
    m = SafetyMonitor(config)  # a run that starts here (a drawn start, say): never a leader
    assert m.observe({"kind": "tick", "ms": 1}, observe(state)) == []
    coverage = m.coverage()
    assert coverage["SAFE-CONSUMER-BELOW-HW"].missing == ()
    assert coverage["SAFE-LEADER-IN-ISR"].missing == ()
    exercised = {pid: c.checked for pid, c in coverage.items()}
    _, reason = certificate([coverage], exercised)
    assert "not checkable" not in reason, reason


def test_an_implementation_that_never_reports_a_leader_proves_nothing() -> None:
    """The cheapest wrong broker the null-leader rule could let through: the reference's
    observations with ``leader: null`` throughout. Nothing it says can be checked against a
    leader, so no certificate."""

    def leaderless(state: reference_impl.State) -> dict[str, Any]:
        return {**observe(state), "leader": None}

    coverages, found = _drive(
        FunctionAdapter(EVERYTHING, _reference_init, _reference_apply, leaderless), bundled_fixtures()
    )
    established, reason = certificate(coverages)
    assert found == [] and not established
    assert "SAFE-STRONG-ISR never checked" in reason and "SAFE-CONSUMER-BELOW-HW never checked" in reason


# --- defects the waivers must not hide ---------------------------------------------------------


def _kip101_under_epochs() -> FunctionAdapter:
    """A leader-epoch broker with a KIP-101 defect: its followers truncate to their HW on
    restart instead of by leader epoch (it runs the hw-truncation rules, claiming leader-epoch)."""

    def init(config: dict[str, Any]) -> reference_impl.State:
        return _reference_init({**config, "generation": "hw-truncation"})

    return FunctionAdapter(
        _description(reference_impl.OBSERVATION_FIELDS, reference_impl.REPLICA_FIELDS), init, _reference_apply, observe
    )


def _wire(steps: Iterable[Step]) -> list[dict[str, Any]]:
    out, produced = [], 0
    for step in steps:
        do = wire_step(step, produced)
        produced += do["kind"] == "produce"
        out.append(do)
    return out


# seed 03 (KIP-101 scenario 1), with the follower's crash a power failure that lost nothing
KIP_101_STEPS = _wire(
    [
        Produce(("m0",)),
        Fetch("B"),
        DeliverFetch("B"),
        Produce(("m1",)),
        Fetch("B"),
        DeliverFetch("B"),
        Fetch("B"),
        Crash("B", unflushed_from=2),
        Restart("B"),
        Crash("A"),
        Elect(),
    ]
)


def _findings(adapter: Adapter, config: Config, steps: list[dict[str, Any]]) -> tuple[SafetyMonitor, list[Finding]]:
    adapter.reset(config.to_dict())
    monitor = SafetyMonitor(config)
    found: list[Finding] = []
    for do in steps:
        answer = adapter.step(do)
        assert answer.rejected is None, (do, answer.rejected)
        found += monitor.observe(do, answer.observation or {})
    return monitor, found


def test_a_kip_101_defect_behind_a_power_failure_that_lost_nothing_fails_safety() -> None:
    config = Config(replicas=("A", "B"), generation=Generation.LEADER_EPOCH)
    monitor, found = _findings(_kip101_under_epochs(), config, KIP_101_STEPS)
    assert monitor.lost_from is None and "SAFE-ACKED" in _props(found)
    # the reference under leader-epoch keeps m1 on the same steps
    assert _findings(ReferenceAdapter(), config, KIP_101_STEPS)[1] == []
    # under hw-truncation the same loss is Kafka 0.10's own (KIP-101): waived, and said so
    ht = Config(replicas=("A", "B"), generation=Generation.HW_TRUNCATION)
    monitor, found = _findings(ReferenceAdapter(), ht, KIP_101_STEPS)
    assert found == [] and {why for _, why in monitor.waived} == {KIP_101}


def test_under_hw_truncation_acknowledging_what_the_isr_lacks_still_fails() -> None:
    """KIP-101 exempts the truncation and what follows from it, not an acknowledgement
    the ISR does not back."""
    m = _monitor(generation=Generation.HW_TRUNCATION)
    assert _props(_produce(m, hw=0)) == {"SAFE-ACK-COMMITTED"}
    m = _monitor(generation=Generation.HW_TRUNCATION, min_insync_replicas=2)
    assert _props(_produce(m, isr=["A"])) == {"SAFE-ACK-MIN-ISR"}


def test_the_zoo_member_electing_uncleanly_when_disabled_fails_safety() -> None:
    fixture = next(f for f in bundled_fixtures() if f.id == "seed-08a-unclean-election-disabled")
    _, found = _drive(resolve("zoo:unclean-election-when-disabled"), [fixture])
    assert {"SAFE-LEADER-IN-ISR", "SAFE-ACKED"} <= _props(found)


def test_a_leader_reporting_an_hw_past_its_log_is_judged_not_crashed_on() -> None:
    """An ISR member holding more below the HW than the leader itself: a finding, not an error."""
    leader = {"role": "leader", "leo": 1, "hw": 2, "log": ["a@0"]}
    found = _monitor().observe({}, _obs(A=leader, B={"leo": 2, "log": ["a@0", "b@0"]}))
    assert _props(found) == {"SAFE-HW-LE-LEO", "SAFE-STRONG-ISR"}


def test_a_record_below_the_leaders_log_start_is_deleted_not_lost() -> None:
    """A consumed record whose offset a later leader's log start has passed (retention) is
    no SAFE-ACKED finding; the same record missing above the log start is (corpus trace
    s1-489 of seed 1 was the false alarm)."""
    from conformance.judging.safety import SafetyMonitor
    from reference_impl import Config

    monitor = SafetyMonitor(Config(replicas=("A", "B")))
    rep = {"online": True, "role": "leader", "leader_epoch": 0, "log": ["a@0", "b@0"], "leo": 2, "hw": 2}
    follower = {"online": True, "role": "follower", "leader_epoch": 0, "log": ["a@0", "b@0"], "leo": 2, "hw": 2}
    first = {"leader": "A", "leader_epoch": 0, "isr": ["A", "B"], "replicas": {"A": rep, "B": follower}}
    consumed = {**first, "consumer": {"offset": 0, "records": ["a@0", "b@0"]}}
    assert monitor.observe({"kind": "consume", "offset": 0}, consumed) == []
    trimmed = {**rep, "log_start": 1, "log": ["b@0"]}
    assert monitor.observe({"kind": "tick", "ms": 1}, {**first, "replicas": {"A": trimmed, "B": follower}}) == []
    lost = {**rep, "log_start": 1, "log": ["c@0"]}
    found = monitor.observe({"kind": "tick", "ms": 1}, {**first, "replicas": {"A": lost, "B": follower}})
    assert [f.property for f in found if f.property == "SAFE-ACKED"] == ["SAFE-ACKED"]


# --- KAFKA-7128 under hw-truncation: a follower joins the ISR at a new leader's stale HW ---

STALE_HW_START: dict[str, Any] = {
    # A led and committed offset 0 (hw 1) with ISR [A, C, D]; C's follower HW still says 0,
    # B is out of the ISR with nothing (kconform generate --seed 1, trace s1-79971, cut short)
    "leader": "A",
    "leader_epoch": 0,
    "isr": ["A", "C", "D"],
    "replicas": {
        "A": {"log": ["i0@0", "i1@0"], "hw": 1, "checkpoint_hw": 1},
        "B": {"log": [], "hw": 0},
        "C": {"log": ["i0@0", "i1@0"], "hw": 0},
        "D": {"log": ["i0@0", "i1@0"], "hw": 1, "checkpoint_hw": 1},
    },
}
STALE_HW_STEPS: list[Step] = [
    Elect(leader="C"),  # C leads with its own HW, 0
    Fetch("B", max_records=1),  # B fetches at 0 = C's HW: it joins the ISR with nothing (ISR-EXPAND-1)
    Crash("C"),
    reference_impl.steps.Tick(30001),
    Elect(leader="D", notify=("D", "B")),  # D leads with HW 1: ISR member B lacks offset 0
]


def _stale_hw_observations(generation: str) -> tuple[Config, list[tuple[dict[str, Any], dict[str, Any] | None]]]:
    """The reference on the story above: each step as sent and its observation (None: refused)."""
    config = reference_impl.config_from_dict(
        {"replicas": ["A", "B", "C", "D"], "generation": generation, "min_insync_replicas": 1}
    )
    state = initial_state(config, STALE_HW_START)
    out: list[tuple[dict[str, Any], dict[str, Any] | None]] = [({}, observe(state))]
    for step in STALE_HW_STEPS:
        try:
            state = apply(state, step)
        except StepRejected:
            out.append((wire_step(step, 0), None))
            continue
        out.append((wire_step(step, 0), observe(state)))
    return config, out


def _monitored(
    config: Config, run: list[tuple[dict[str, Any], dict[str, Any] | None]]
) -> tuple[SafetyMonitor, list[tuple[int, str]]]:
    monitor = SafetyMonitor(config)
    monitor.given(run[0][1] or {})
    found = []
    for number, (do, obs) in enumerate(run[1:], 1):
        if obs is None:
            monitor.refused(do)
        else:
            found += [(number, f.property) for f in monitor.observe(do, obs)]
    return monitor, found


def test_under_hw_truncation_a_join_at_a_new_leaders_stale_hw_is_kafka_7128_not_a_finding() -> None:
    """Kafka 0.10 admits a follower once its LEO reaches the leader's HW, and a new leader's
    HW can lag what the old one committed: B joins C's ISR lacking offset 0, and under D
    (HW 1) the ISR member B lacks a committed record. That is KAFKA-7128 (fixed in 2.1 by
    ISR-EXPAND-2), the reference's hw-truncation behaviour: waived, not a finding (found
    by replaying a 100,000-trace corpus, where the reference failed its own safety level)."""
    config, run = _stale_hw_observations("hw-truncation")
    assert run[2][1] is not None and "B" in run[2][1]["isr"]  # B joined at C's stale HW
    monitor, found = _monitored(config, run)
    assert found == []
    assert [why for f, why in monitor.waived if f.property == "SAFE-STRONG-ISR"] == [KAFKA_7128]
    assert monitor.stale_joins == [(0, 1)]


STALE_HW_LEADERLESS_START: dict[str, Any] = {
    # no leader now; A's HW says offset 0 was committed under an earlier one (kconform
    # generate --seed 1 --traces 1000000, trace s1-554743, cut short)
    "leader": None,
    "leader_epoch": 3,
    "isr": ["A", "C"],
    "replicas": {
        "A": {"log": ["i0@1", "i1@2"], "hw": 1, "checkpoint_hw": 1},
        "B": {"log": [], "hw": 0},
        "C": {"log": ["i0@1", "i1@2"], "hw": 0},
        "D": {"log": [], "hw": 0},
    },
}


def test_a_given_start_without_a_leader_still_says_what_was_committed() -> None:
    """The HW a replica holds in a given start came from a leader that reported it: with no
    leader there, A's HW 1 still says offset 0 was committed. C leads with its stale HW 0,
    B joins its ISR with nothing, and once A leads B lacks offset 0: KAFKA-7128 as above,
    waived (the 1,000,000-trace replay failed the reference on this until the monitor read
    the start's HWs, not only its leader's)."""
    config = reference_impl.config_from_dict(
        {"replicas": ["A", "B", "C", "D"], "generation": "hw-truncation", "min_insync_replicas": 1}
    )
    state = initial_state(config, STALE_HW_LEADERLESS_START)
    run: list[tuple[dict[str, Any], dict[str, Any] | None]] = [({}, observe(state))]
    for step in [Elect(leader="C"), Fetch("B", max_records=1), Crash("C"), reference_impl.steps.Tick(30001)]:
        state = apply(state, step)
        run.append((wire_step(step, 0), observe(state)))
    state = apply(state, Elect(leader="A", notify=("A", "B")))
    run.append((wire_step(Elect(leader="A", notify=("A", "B")), 0), observe(state)))
    assert "B" in state.controller.isr and state.replica("A").hw == 1 and state.replica("B").leo == 0
    monitor, found = _monitored(config, run)
    assert found == []
    assert [why for f, why in monitor.waived if f.property == "SAFE-STRONG-ISR"] == [KAFKA_7128]
    assert monitor.stale_joins == [(0, 1)]
    wrong = [(do, dict(obs) if obs is not None else None) for do, obs in run]
    last = wrong[-1][1]
    assert last is not None  # B holding another record there is still a finding
    last["replicas"] = {**last["replicas"], "B": {**last["replicas"]["B"], "log": ["zz@9"], "leo": 1}}
    assert (5, "SAFE-STRONG-ISR") in _monitored(config, wrong)[1]


def test_the_kafka_7128_waiver_covers_only_a_lack_at_a_stale_hw() -> None:
    """What the waiver must not let through (the cheapest wrong brokers it could admit): a
    member admitted below the HW its leader reported (ISR-EXPAND-1 broken, in every
    generation), and a member that joined at a stale HW but then holds other records than
    the leader there (not a lack: a divergence); and under leader-epoch the reference never
    admits B on this story, so nothing is waived there."""
    config, run = _stale_hw_observations("hw-truncation")
    below = [(do, dict(obs) if obs is not None else None) for do, obs in run]
    start = below[1][1]
    assert start is not None
    start["replicas"] = {**start["replicas"], "C": {**start["replicas"]["C"], "hw": 1}}  # C reports HW 1 before B joins
    assert "SAFE-STRONG-ISR" in {p for _, p in _monitored(config, below)[1]}

    other = [(do, dict(obs) if obs is not None else None) for do, obs in run]
    last = other[-1][1]
    assert last is not None
    last["replicas"] = {**last["replicas"], "B": {**last["replicas"]["B"], "log": ["zz@9"], "leo": 1}}
    assert (5, "SAFE-STRONG-ISR") in _monitored(config, other)[1]

    le_config, le_run = _stale_hw_observations("leader-epoch")
    assert all("B" not in obs["isr"] for _, obs in le_run if obs is not None)
    monitor, found = _monitored(le_config, le_run)
    assert found == [] and monitor.stale_joins == []


def test_a_counting_monitor_covers_what_a_whole_one_covers() -> None:
    """``runner.reference_coverage`` wants only how often the reference's run evaluates each
    property, and its monitor skips what SAFE-ACKED costs past counting it
    (``SafetyMonitor.counting``): on every bundled fixture the reference runs, through
    both of its paths (the fixture's own whole observations, the lowered run), the coverage
    is the whole monitor's."""
    from conformance.judging import runner

    description = ReferenceAdapter().describe()
    built = []
    original = runner.SafetyMonitor
    for fixture in bundled_fixtures():
        try:
            lowered = runner.plan(fixture, frozenset(description.steps))
        except Exception:  # a fixture the reference cannot run has no coverage to compare
            continue
        coverages = []
        for counting in (True, False):

            def monitor(*args: Any, forced: bool = counting, **kwargs: Any) -> SafetyMonitor:
                built.append(forced)
                return original(*args, **{**kwargs, "counting": forced})

            runner.SafetyMonitor = monitor  # type: ignore[misc,assignment]
            try:
                coverages.append(runner.reference_coverage(fixture, lowered, description))
            finally:
                runner.SafetyMonitor = original  # type: ignore[misc]
        assert coverages[0] == coverages[1], fixture.id
    assert built.count(True) == built.count(False) > 300
