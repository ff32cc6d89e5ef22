"""Older Apache Kafka lines behind the stdio protocol: ``--impl kafka-2.6`` (adapters/kafka-2.6,
``leader-epoch``) and ``--impl kafka-0.10`` (adapters/kafka-0.10, ``hw-truncation``);
docs/kafka.md, "Older Kafka lines".

These tests need a JDK and Maven; without them they skip with the reason. The session
builds each adapter once if it is not built (the first build downloads that Kafka from
Maven Central; .ci/run builds them before pytest).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import kconform
from conformance.adapters.stdio import StdioAdapter
from conformance.implementations import kafka as kafka_impl
from conformance.implementations import kafka_lines

LINE = kafka_lines.KAFKA_26

CONFIG: dict[str, Any] = {
    "replicas": ["A", "B"],
    "generation": "leader-epoch",
    "initial_leader": None,
    "min_insync_replicas": 1,
    "unclean_leader_election": False,
    "replica_lag_time_max_ms": 1000,
    "replica_fetch_wait_max_ms": 500,
    "replica_high_watermark_checkpoint_interval_ms": 0,
    "request_timeout_ms": 30000,
}

CANDIDATE_REFERENCE_ERRORS: dict[str, str] = {}
"""Bundled fixtures Kafka 2.6 fails where the reference looks wrong: each classified in docs/kafka.md,
with a witness in adapters/kafka-2.6/candidates. None now: candidates A (EPOCH-PRE-2) and C (LAI-4,
RESTART-1) are fixed, and their witnesses are the bundled fixtures empty-follower-truncates-to-hw-without-asking
and no-leader-keeps-follower-state, which Kafka 2.6 (and 0.10, for C) pass with the rest."""


def _built_or_skip(line: kafka_lines.KafkaLine) -> Path:
    """The line's module folder, built if needed; the test skips with the reason when it cannot be."""
    missing = kafka_impl.missing_tools()
    if missing:
        pytest.skip(f"the {line.describes} adapter needs {' and '.join(missing)} (JDK 17+, Maven 3.8+)")
    if not kafka_lines.is_built(line):
        try:
            kafka_lines.build(line)
        except kafka_impl.KafkaAdapterUnavailable as exc:
            pytest.skip(f"the {line.describes} adapter cannot be built here: {exc}")
    return kafka_lines.adapter_dir(line)


@pytest.fixture(scope="session")
def built() -> Path:
    return _built_or_skip(LINE)


@pytest.fixture()
def kafka(built: Path) -> Iterator[StdioAdapter]:
    adapter = kafka_lines.kafka_26()
    yield adapter
    adapter.close()


def step(adapter: StdioAdapter, **fields: Any) -> dict[str, Any]:
    result = adapter.step(fields)
    assert result.rejected is None, result.rejected
    assert result.observation is not None
    return result.observation


def test_hello_declares_the_leader_epoch_generation(kafka: StdioAdapter) -> None:
    d = kafka.describe()
    assert d.name == "apache-kafka" and d.version == "2.6.3"
    assert list(d.generations) == ["leader-epoch"]
    assert {"epoch_request", "deliver_epoch", "epoch_round"} <= set(d.steps)
    assert "deliver_alter_partition" not in d.steps  # ZooKeeper era: the leader writes the ISR itself


def test_another_generation_is_refused_with_a_message(kafka: StdioAdapter) -> None:
    with pytest.raises(Exception, match="leader-epoch only"):
        kafka.reset({**CONFIG, "generation": "diverging-epoch"})


def test_a_new_follower_asks_offsets_for_leader_epoch_then_truncates(kafka: StdioAdapter) -> None:
    kafka.reset(CONFIG)
    step(kafka, kind="produce", values=["m0"], acks="1", id="p1", to=None)
    obs = step(kafka, kind="fetch_round", replica="B", max_records=None, max_wait_ms=None)
    assert obs["replicas"]["B"]["log"] == ["m0@0"]
    step(kafka, kind="produce", values=["m1"], acks="1", id="p2", to=None)  # only A has it
    obs = step(kafka, kind="elect", leader="B", notify=None)
    a = obs["replicas"]["A"]
    assert (a["role"], a["leader_epoch"], a["fetch_state"]) == ("follower", 1, "truncating")
    rejected = kafka.step({"kind": "fetch", "replica": "A", "max_records": None, "max_wait_ms": None})
    assert rejected.rejected is not None and rejected.rule == "FETCH-PRE-1"
    obs = step(kafka, kind="epoch_round", replica="A")
    a = obs["replicas"]["A"]
    # B answered epoch 0 ends at 1 (Partition.lastOffsetForLeaderEpoch): A drops m1.
    assert (a["log"], a["fetch_state"], a["epoch_cache"]) == (["m0@0"], "fetching", [[0, 0]])


def test_isr_changes_are_the_leaders_own_write_and_a_dead_follower_bumps_the_epoch(kafka: StdioAdapter) -> None:
    kafka.reset({**CONFIG, "replicas": ["A", "B", "C"]})
    step(kafka, kind="tick", ms=1001)
    obs = step(kafka, kind="isr_expiration", replica="A")
    # ISR-WRITE-1: maybeShrinkIsr's ZooKeeper write, same leader epoch, znode version + 1.
    assert (obs["isr"], obs["leader_epoch"], obs["partition_epoch"]) == (["A"], 0, 1)
    step(kafka, kind="fetch_round", replica="B", max_records=None, max_wait_ms=0)
    obs = step(kafka, kind="fetch_round", replica="C", max_records=None, max_wait_ms=0)
    assert obs["isr"] == ["A", "B", "C"] and obs["partition_epoch"] == 3
    step(kafka, kind="crash", replica="C", unflushed_from=None)
    obs = step(kafka, kind="elect", leader=None, notify=None)
    # CTRL-FAIL-1 (ZooKeeper): removing a dead follower bumps the leader epoch; A leads again.
    assert (obs["isr"], obs["leader"], obs["leader_epoch"]) == (["A", "B"], "A", 1)
    assert obs["replicas"]["A"]["leader_epoch"] == 1 and obs["replicas"]["B"]["fetch_state"] == "truncating"


def test_a_crashed_leader_recovers_its_log_and_the_checkpointed_hw(kafka: StdioAdapter) -> None:
    kafka.reset(CONFIG)
    step(kafka, kind="produce", values=["m0"], acks="1", id="p1", to=None)
    step(kafka, kind="fetch_round", replica="B", max_records=None, max_wait_ms=None)
    step(kafka, kind="fetch_round", replica="B", max_records=None, max_wait_ms=0)
    obs = step(kafka, kind="crash", replica="A", unflushed_from=None)
    assert obs["replicas"]["A"]["online"] is False and obs["replicas"]["A"]["checkpoint_hw"] == 1
    step(kafka, kind="elect", leader=None, notify=None)
    obs = step(kafka, kind="restart", replica="A")
    a = obs["replicas"]["A"]
    assert (a["role"], a["leader"], a["log"], a["hw"], a["fetch_state"]) == (
        "follower",
        "B",
        ["m0@0"],
        1,
        "truncating",
    )


def test_a_given_view_of_a_follower_is_the_one_the_state_states(kafka: StdioAdapter) -> None:
    """remote_leo and last_caught_up_ms set the leader's Replica as given (updateFetchState, then
    resetLastCaughtUpTime, as makeLeader sets it): B, out of the ISR, holds A's HW exactly when it
    is given as caught up (HW-LEADER-2), also at A's LEO, where a fetch would have made it so."""
    from reference_impl import config_from_dict
    from reference_impl.given import normalise

    for log, caught_up, hw in ((["m0@0"], 0, 0), (["m0@0"], None, 2), ([], 0, 0), ([], None, 1)):
        initial = {
            "leader": "A",
            "isr": ["A"],
            "replicas": {"A": {"log": log, "hw": 0, "remote_leo": {"B": 0}, "last_caught_up_ms": {"B": caught_up}}},
        }
        kafka.reset(CONFIG, normalise(config_from_dict(CONFIG), initial))
        obs = step(kafka, kind="produce", values=["m1"], acks="1", id="p1", to=None)
        assert obs["replicas"]["A"]["hw"] == hw, (log, caught_up)


def test_every_runnable_bundled_fixture_passes_or_is_classified(built: Path) -> None:
    fixtures, problems = kconform.load_fixtures([kconform.BUNDLED_FIXTURES])
    assert not problems
    impl = kconform.Implementation("kafka-2.6", kconform.resolve("kafka-2.6"))
    document = kconform.run_suite([impl], fixtures, level="exact")
    failed = {r["fixture"] for r in document["results"] if r["status"] not in ("PASS", "SKIP", "ERROR")}
    assert failed == set(CANDIDATE_REFERENCE_ERRORS), failed
    # The only errors: a max_records that cuts a batch, which Kafka cannot do (docs/kafka.md).
    errors = [r for r in document["results"] if r["status"] == "ERROR"]
    assert all("Kafka fetches whole batches" in r["reason"] for r in errors), [r["reason"] for r in errors]
    seeds = [r for r in document["results"] if r["fixture"].startswith("seed-") and r["status"] != "SKIP"]
    assert seeds and all(r["status"] == "PASS" for r in seeds if r["fixture"] not in CANDIDATE_REFERENCE_ERRORS)
    assert kconform.status_counts(document)["PASS"] >= 60


def test_a_missing_build_names_the_build_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if "java" in kafka_impl.missing_tools():
        pytest.skip("needs java on PATH")
    monkeypatch.setenv(LINE.env_dir, str(tmp_path / "adapters" / LINE.folder))
    with pytest.raises(kconform.UnknownImplementation, match=re.escape(LINE.build_command)):
        kconform.resolve("kafka-2.6")


FIXED_ON_26 = (
    "empty-follower-truncates-to-hw-without-asking",  # A: EPOCH-PRE-2
    "no-leader-keeps-follower-state",  # C: LAI-4, RESTART-1
    "produce-min-isr-checks-leaders-own-isr",  # D: PRODUCE-2
    "follower-log-start-fetching-at-leaders-start",  # E: LOG-START-4
    "given-leader-unknown-follower-no-previous-fetch-hw",  # F: INIT-5
    "given-leader-unknown-follower-no-previous-fetch-isr",  # F: INIT-5
    "raised-log-start-reverts-on-restart",  # I: LOG-START-5
    "raised-log-start-checkpointed-survives-restart",  # I: CKPT-3
    "leaderless-start-offline-replica-epoch",  # a drawn start 2.6 cannot hold: INIT-4
)
"""The bundled witnesses of the reference errors Kafka 2.6 showed (docs/kafka.md, "Kafka 2.6")."""


def test_kafka_26_and_the_reference_agree_on_every_fixed_candidate(built: Path) -> None:
    """Every candidate reference error Kafka 2.6.3 showed is fixed and its witness bundled: no
    candidate folder is left, and Kafka 2.6 and the reference pass each witness's leader-epoch
    case. If Kafka stops passing one, the classification is stale."""
    _agree_on_fixed_witnesses(built, "kafka-2.6", FIXED_ON_26, "leader-epoch")


def _agree_on_fixed_witnesses(built: Path, impl: str, names: tuple[str, ...], generation: str) -> None:
    """No candidate folder is left in the line's build folder, and the line and the
    reference pass each bundled witness's case of ``generation`` at level exact."""
    assert not (built / "candidates").exists() or not list((built / "candidates").glob("*.yaml"))
    files = [kconform.BUNDLED_FIXTURES / "kafka" / f"{name}.yaml" for name in names]
    fixtures, problems = kconform.load_fixtures(files)
    assert not problems
    fixtures = [f for f in fixtures if f.config.generation.value == generation]
    assert len(fixtures) == len(names)
    document = kconform.run_suite(
        [
            kconform.Implementation(impl, kconform.resolve(impl)),
            kconform.Implementation("reference", kconform.resolve("reference")),
        ],
        fixtures,
    )
    statuses = {(r["implementation"], r["fixture"]): r["status"] for r in document["results"]}
    assert set(statuses.values()) == {"PASS"}, statuses


def test_kafka_26_passes_the_fixed_candidates_at_level_safety(built: Path) -> None:
    """Candidates A and C, now bundled: Kafka 2.6 passes them at level safety too. C's restarted
    broker knows no epoch (-1), which SAFE-EPOCHS-INCREASE no longer reads as an epoch going back."""
    names = (
        "empty-follower-truncates-to-hw-without-asking",
        "no-leader-keeps-follower-state",
        "ctrl-leaderless-epoch-bump",
    )
    fixtures, problems = kconform.load_fixtures([kconform.BUNDLED_FIXTURES / "kafka" / f"{n}.yaml" for n in names])
    assert not problems
    impl = kconform.Implementation("kafka-2.6", kconform.resolve("kafka-2.6"))
    document = kconform.run_suite([impl], fixtures, level="safety")
    status = {r["fixture"]: r["status"] for r in document["results"] if r["status"] != "SKIP"}
    assert status == {
        "empty-follower-truncates-to-hw-without-asking": "PASS",
        "no-leader-keeps-follower-state/leader-epoch": "PASS",
        "ctrl-leaderless-epoch-bump": "PASS",
    }


# ---------------------------------------------------------------------- Kafka 0.10 (hw-truncation)

OLD = kafka_lines.KAFKA_010

OLD_EXPECTATIONS = Path(__file__).resolve().parents[1] / "adapters" / OLD.folder / "expectations.yaml"

OLD_CANDIDATE_REFERENCE_ERRORS: dict[str, str] = {}
"""Bundled fixtures Kafka 0.10 fails where the reference looks wrong. None now: the leaderless restart
(ctrl-last-isr-member-unclean-hw-truncation, candidate C of the 2.6 line) is fixed (LAI-4, RESTART-1)."""


@pytest.fixture(scope="session")
def built_010() -> Path:
    return _built_or_skip(OLD)


@pytest.fixture()
def kafka_010(built_010: Path) -> Iterator[StdioAdapter]:
    adapter = kafka_lines.kafka_010()
    yield adapter
    adapter.close()


def test_kafka_010_declares_hw_truncation_without_epochs(kafka_010: StdioAdapter) -> None:
    d = kafka_010.describe()
    assert d.version == "0.10.2.2" and list(d.generations) == ["hw-truncation"]
    assert "epoch_request" not in d.steps and "epoch_query" not in d.steps
    assert not d.initial_state


def test_kafka_010_truncates_a_new_follower_to_its_hw(kafka_010: StdioAdapter) -> None:
    kafka_010.reset({**CONFIG, "generation": "hw-truncation"})
    step(kafka_010, kind="produce", values=["m0"], acks="1", id="p1", to=None)
    step(kafka_010, kind="fetch_round", replica="B", max_records=None, max_wait_ms=None)
    obs = step(kafka_010, kind="produce", values=["m1"], acks="1", id="p2", to=None)
    assert obs["replicas"]["A"]["log"] == ["m0@0", "m1@0"]  # the key carries the epoch (docs/kafka.md)
    obs = step(kafka_010, kind="elect", leader="B", notify=None)
    a = obs["replicas"]["A"]
    # TRUNC-HW-1: ReplicaManager.makeFollowers truncates A to its HW (0): both records go.
    assert (a["role"], a["leader"], a["leo"], a["log"]) == ("follower", "B", 0, [])


def test_every_runnable_bundled_fixture_passes_on_kafka_010_or_is_classified(built_010: Path) -> None:
    fixtures, problems = kconform.load_fixtures([kconform.BUNDLED_FIXTURES])
    assert not problems
    impl = kconform.Implementation("kafka-0.10", kconform.resolve("kafka-0.10"))
    expectations, problems = kconform.load_expectations([OLD_EXPECTATIONS])
    assert not problems
    document = kconform.run_suite([impl], fixtures, level="exact", expectations=expectations)
    status = {r["fixture"]: r["status"] for r in document["results"]}
    failed = {f for f, s in status.items() if s not in ("PASS", "SKIP", "XFAIL")}
    assert failed == set(OLD_CANDIDATE_REFERENCE_ERRORS), failed
    assert {f for f, s in status.items() if s == "XFAIL"} == {
        "seed-03-data-loss-004-table",
        "kafka-18991-stale-epoch-answer-dropped/hw-truncation",
    }
    assert kconform.status_counts(document)["PASS"] >= 25


FIXED_ON_010 = (
    "isr-caught-up-as-of-previous-fetch",  # witnesses 3, 6: ISR-CAUGHT-UP-2 (KAFKA-4485)
    "hw-caught-up-follower-hw-truncation",  # witness 8: HW-LEADER-2 (KAFKA-4485)
    "ht-reelected-leader-keeps-parked-fetch",  # witnesses 1, 2: FETCH-PARK-4
)
"""The bundled witnesses of the reference errors Kafka 0.10.2.2's settled fuzz showed (docs/kafka.md,
"Kafka 0.10")."""


def test_kafka_010_and_the_reference_agree_on_every_fixed_witness(built_010: Path) -> None:
    """Every reference error the 0.10 settled fuzz showed is fixed and its witness bundled: no
    candidate folder is left, and Kafka 0.10 and the reference pass each witness's
    hw-truncation case at level exact. If Kafka stops passing one, the classification is stale."""
    _agree_on_fixed_witnesses(built_010, "kafka-0.10", FIXED_ON_010, "hw-truncation")
