"""my-broker's own unit tests live beside the kconform cases."""

from __future__ import annotations

import my_broker


def test_starts_with_the_first_replica_leading() -> None:
    state = my_broker.start({"generation": "leader-epoch", "replicas": ["A", "B"]})
    assert my_broker.snapshot(state)["leader"] == "A"
