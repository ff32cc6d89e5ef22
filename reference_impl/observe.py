"""The state as plain data: what fixtures assert on and adapters report.

The observation is JSON-ready (dicts, lists, strings, ints, bools, None). Fixtures
state a subset of it; the runner compares only the fields a fixture states. The field
list is ``OBSERVATION_FIELDS``; an adapter that exposes fewer says so in its
capabilities.
"""

from __future__ import annotations

from typing import Any

from . import epoch_cache
from . import log as logmod
from .state import Replica, State

REPLICA_FIELDS = (
    "online",
    "role",
    "leader",
    "leader_epoch",
    "leo",
    "hw",
    "checkpoint_hw",
    "log",
    "epoch_cache",
    "fetch_state",
    "remote_leo",
)
"""Per replica. ``remote_leo`` (the leader's view of each follower) only on a leader."""

OBSERVATION_FIELDS = (
    "clock_ms",
    "leader",
    "leader_epoch",
    "isr",
    "partition_epoch",
    "replicas",
    "producer",
    "consumer",
    "epoch_query",
    "in_flight",
)


def observe_replica(replica: Replica) -> dict[str, Any]:
    out: dict[str, Any] = {
        "online": replica.online,
        "role": replica.role.value,
        "leader": replica.leader,
        "leader_epoch": replica.leader_epoch,
        "leo": replica.leo,
        "hw": replica.hw,
        "checkpoint_hw": replica.checkpoint_hw,
        "log": logmod.render(replica.log),
        "epoch_cache": epoch_cache.render(replica.epoch_cache),
        "fetch_state": replica.fetch_state.value,
    }
    if replica.progress:
        out["remote_leo"] = {p.replica: p.remote_leo for p in replica.progress}
    return out


def observe_in_flight(state: State) -> dict[str, Any]:
    """One canonical line per message, in a stable order (see ``describe.py``)."""
    from .describe import describe_message

    return {
        "parked_fetches": [describe_message(m) for m in state.parked_fetches],
        "fetch_responses": [describe_message(m) for m in state.fetch_responses],
        "epoch_responses": [describe_message(m) for m in state.epoch_responses],
        "leader_and_isr": [describe_message(m) for m in state.leader_and_isr],
        "pending_produces": [describe_message(m) for m in state.pending_produces],
        "alter_partitions": [describe_message(m) for m in state.alter_partitions],
    }


def observe(state: State) -> dict[str, Any]:
    """The whole observable state."""
    consumer: dict[str, Any] | None = None
    if state.consumed is not None:
        c = state.consumed
        consumer = {
            "offset": c.offset,
            "records": [f"{value}@{epoch}" for _, value, epoch in c.records],
            "error": c.error,
        }
    epoch_query: dict[str, Any] | None = None
    if state.epoch_query is not None:
        q = state.epoch_query
        epoch_query = {
            "replica": q.replica,
            "requested_epoch": q.requested_epoch,
            "error": q.error,
            "leader_epoch": q.epoch,
            "end_offset": q.end_offset,
        }
    return {
        "clock_ms": state.clock_ms,
        "leader": state.controller.leader,
        "leader_epoch": state.controller.epoch,
        "isr": list(state.controller.isr),
        "partition_epoch": state.controller.partition_epoch,
        "replicas": {r.id: observe_replica(r) for r in state.replicas},
        "producer": {o.id: o.status for o in state.produces},
        "consumer": consumer,
        "epoch_query": epoch_query,
        "in_flight": observe_in_flight(state),
    }
