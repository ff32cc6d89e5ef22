"""The two rounds: a request and, when answered at once, its answer, in one step.

An implementation whose requests and answers cannot be told apart (a synchronous RPC)
takes these instead of the request and delivery steps (spec: FETCH-ROUND-1, EPOCH-ROUND-1).
"""

from __future__ import annotations

from . import follower
from .draft import Draft


def fetch_round(d: Draft, replica_id: str, max_records: int | None = None, max_wait_ms: int | None = None) -> None:
    """FETCH-ROUND-1: send a fetch; deliver its response if the leader answered at once."""
    d.fired.append("FETCH-ROUND-1")
    follower.send_fetch(d, replica_id, max_records, max_wait_ms)
    if any(r.dst == replica_id for r in d.fetch_responses):
        follower.deliver_fetch(d, replica_id)


def epoch_round(d: Draft, replica_id: str) -> None:
    """EPOCH-ROUND-1: send OffsetsForLeaderEpoch and deliver the answer."""
    d.fired.append("EPOCH-ROUND-1")
    follower.send_epoch_request(d, replica_id)
    if any(r.dst == replica_id for r in d.epoch_responses):
        follower.deliver_epoch(d, replica_id)
