"""kconform adapter for the toy broker (examples/toy_broker.py), written with the SDK.

The SDK (conformance/sdk.py) does the protocol; this file is only the mapping.
Run: kconform run --impl 'exec:python3 examples/toy_broker_adapter.py'
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from toy_broker import Broker, NotAllowed

from conformance import sdk


class ToyBrokerAdapter(sdk.Adapter):
    name, version, generations = "toy-broker", "1.0", ("leader-epoch",)
    steps = ("produce", "fetch", "deliver_fetch", "fetch_round", "tick", "consume")
    fields = ("clock_ms", "leader", "leader_epoch", "isr", "replicas", "producer", "consumer")
    replica_fields = ("online", "role", "leader", "leader_epoch", "leo", "hw", "log", "remote_leo")
    refusals = (NotAllowed,)

    def describe(self) -> dict[str, Any]:  # one leader, no redirects: a produce always goes to it
        fetch = ["replica", "max_records"]  # no max_wait_ms: a fetch waits replica.fetch.wait.max.ms
        return {"step_fields": {"produce": ["values", "acks", "id"], "fetch": fetch, "fetch_round": fetch}}

    def reset(self, config: dict[str, Any]) -> None:
        names = config["replicas"]
        self.broker = Broker(
            names, config["initial_leader"] or names[0], config["replica_lag_time_max_ms"],
            config["replica_fetch_wait_max_ms"], config["request_timeout_ms"], config["min_insync_replicas"],
        )  # fmt: skip
        self.consumed: dict[str, Any] | None = None

    def step(self, step: dict[str, Any]) -> None:
        b, kind = self.broker, step["kind"]
        if kind == "produce":
            self.produce_ids.bind(step["id"], b.append(step["values"], step["acks"]))
        elif kind in ("fetch", "fetch_round"):
            b.fetch(step["replica"], step["max_records"])
            if kind == "fetch_round" and b.followers[step["replica"]].answer is not None:
                b.receive(step["replica"])
        elif kind == "deliver_fetch":
            b.receive(step["replica"])
        elif kind == "tick":
            b.advance(step["ms"])
        elif kind == "consume":
            try:
                records, error = b.read(step["offset"]), None
            except LookupError as exc:
                records, error = [], str(exc)
            self.consumed = {"offset": step["offset"], "records": [f"{v}@{e}" for v, e in records], "error": error}

    def observe(self) -> dict[str, Any]:
        b = self.broker

        def replica(log: list[tuple[str, int]], hw: int, role: str) -> dict[str, Any]:
            view = {"online": True, "role": role, "leader": b.leader, "leader_epoch": 0, "leo": len(log), "hw": hw}
            return {**view, "log": [f"{v}@{e}" for v, e in log]}

        replicas = {b.leader: replica(b.log, b.hw, "leader")}
        replicas[b.leader]["remote_leo"] = {f.name: f.fetch_offset for f in b.followers.values()}
        replicas.update({f.name: replica(f.log, f.hw, "follower") for f in b.followers.values()})
        return {
            "clock_ms": b.now, "leader": b.leader, "leader_epoch": 0, "isr": b.isr, "consumer": self.consumed,
            "replicas": {n: replicas[n] for n in b.names},
            "producer": self.produce_ids.statuses(lambda handle: b.requests[handle].status),
        }  # fmt: skip


if __name__ == "__main__":
    sdk.serve(ToyBrokerAdapter())
