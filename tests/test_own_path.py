"""The safety level's own-path runs (``conformance/search/own_path.py``) send only what the
implementation says it takes."""

from __future__ import annotations

import random

from conformance.adapters.base import Description
from conformance.search.distribution import RandomChooser
from conformance.search.own_path import honoured, propose
from reference_impl import Config
from reference_impl.steps import Crash, Fetch


def _description(step_fields: dict[str, tuple[str, ...]]) -> Description:
    return Description(
        name="x",
        version="1",
        generations=("leader-epoch",),
        steps=("produce", "fetch", "crash", "restart", "elect", "tick"),
        fields=("leader",),
        replica_fields=("leo",),
        step_fields=step_fields,
    )


def test_optional_fields_not_honoured_are_sent_at_their_defaults() -> None:
    kafka_like = _description({"crash": (), "fetch": ("max_records",)})
    assert honoured(Crash("A", unflushed_from=2), kafka_like) == Crash("A")
    assert honoured(Fetch("B", max_records=1, max_wait_ms=0), kafka_like) == Fetch("B", max_records=1)
    assert honoured(Crash("A", unflushed_from=2), _description({})) == Crash("A", unflushed_from=2)


def test_a_crash_drawn_with_a_power_failure_reaches_kafka_without_it() -> None:
    """Kafka's adapters declare ``crash`` with no optional field: a drawn power failure
    would be an error of the adapter, not a finding (fuzz --impl kafka-0.10 found this)."""
    chooser = RandomChooser(random.Random(3))
    config = Config(replicas=("A", "B"))
    kafka_like = _description({"crash": ()})
    drawn = [propose(chooser, config, None, {"crash": 1}, 0) for _ in range(200)]
    assert any(isinstance(s, Crash) and s.unflushed_from is not None for s in drawn)
    assert all(honoured(s, kafka_like).unflushed_from is None for s in drawn if isinstance(s, Crash))
