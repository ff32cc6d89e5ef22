"""What a follower does: send fetches and epoch queries, apply their answers, truncate.

The follower-HW rule (HW-FOLLOWER-1) is applied in ``deliver_fetch`` through
``hw.follower_hw``; truncation by epoch (TRUNC-EPOCH-*) in ``deliver_epoch`` and on a
diverging-epoch fetch response. Becoming a follower is ``roles.become_follower``.
"""

from __future__ import annotations

from typing import cast

from . import broker, epoch_cache, hw
from .draft import Draft, Readable
from .epoch_leader import handle_epoch_request
from .errors import StepRejected
from .leader_fetch import handle_fetch
from .messages import Delivered, EpochResponse, FetchResponse
from .network import reachable
from .replica_ops import raise_log_start, set_hw, truncate, truncate_fully_and_start_at
from .state import FETCHING, FOLLOWER, LEADER, TRUNCATING, Replica
from .truncation import offset_truncation
from .values import evolve


def has_outstanding_fetch(s: Readable, replica_id: str) -> bool:
    """A follower has at most one fetch outstanding (parked or answered, not delivered)."""
    incarnation = s.replicas[s.config.position[replica_id]].incarnation
    return any(p.follower == replica_id and p.incarnation == incarnation for p in s.parked_fetches) or any(
        r.dst == replica_id for r in s.fetch_responses
    )


def _not_following(s: Readable, replica_id: str, action: str) -> str | None:
    """Why ``replica_id`` cannot send ``action`` to a leader (FETCH-PRE-1 and EPOCH-PRE-1
    share this part): it is down, not a follower, or its leader is down."""
    replica = s.replicas[s.config.position[replica_id]]
    if not replica.online:
        return f"{action}: replica {replica_id} is offline"
    if replica.role is not FOLLOWER or replica.leader is None:
        return f"{action}: replica {replica_id} is not a follower (role {replica.role.value})"
    if not s.replicas[s.config.position[replica.leader]].online:
        return f"{action}: {replica_id}'s leader {replica.leader} is offline"
    return None


# --- fetch ---------------------------------------------------------------------------


def fetch_refused(
    s: Readable, replica_id: str, max_records: int | None = None, max_wait_ms: int | None = None
) -> StepRejected | None:
    """FETCH-PRE-1: only a live follower of a live leader, done truncating, with no fetch
    outstanding, sends a fetch."""
    why = _not_following(s, replica_id, "fetch")
    if why is not None:
        return StepRejected("FETCH-PRE-1", why)
    if s.replicas[s.config.position[replica_id]].fetch_state is TRUNCATING:
        return StepRejected(
            "FETCH-PRE-1",
            f"fetch: replica {replica_id} must truncate first: send OffsetsForLeaderEpoch (epoch_request)",
        )
    if has_outstanding_fetch(s, replica_id):
        return StepRejected(
            "FETCH-PRE-1",
            f"fetch: replica {replica_id} already has a fetch outstanding (parked or with a response in flight)",
        )
    return None


def send_fetch(d: Draft, replica_id: str, max_records: int | None = None, max_wait_ms: int | None = None) -> None:
    """FETCH-PRE-1: a live follower with no fetch outstanding (and, under leader-epoch,
    done truncating) sends ``fetch(offset = LEO)`` to the leader it knows, carrying its
    current leader epoch and, under diverging-epoch, the epoch of its last record."""
    if (refused := fetch_refused(d, replica_id)) is not None:
        raise refused
    follower = d.replicas[d.position[replica_id]]
    last_fetched = epoch_cache.latest_epoch(follower.epoch_cache) if d.profile.fetch_carries_last_epoch else None
    d.fired.append("FETCH-PRE-1")
    handle_fetch(
        d,
        cast(str, follower.leader),
        replica_id,
        follower.leo,
        follower.leader_epoch,
        last_fetched,
        follower.incarnation,
        max_records,
        max_wait_ms,
    )


def deliver_fetch_refused(s: Readable, replica_id: str) -> StepRejected | None:
    """FETCH-DELIVER-PRE-1: a fetch response is in flight to ``replica_id``."""
    if not any(r.dst == replica_id for r in s.fetch_responses):
        return StepRejected("FETCH-DELIVER-PRE-1", f"deliver_fetch: no fetch response is in flight to {replica_id}")
    return None


def deliver_fetch(d: Draft, replica_id: str) -> None:
    """The follower processes the fetch response in flight to it."""
    if (refused := deliver_fetch_refused(d, replica_id)) is not None:
        raise refused
    response = next(r for r in d.fetch_responses if r.dst == replica_id)
    d.fetch_responses = tuple([r for r in d.fetch_responses if r is not response])
    follower = d.replicas[d.position[replica_id]]
    if not reachable(d, replica_id, response.incarnation, response.src, response.request_epoch):
        d.delivered = (*d.delivered, Delivered(response, dropped=True))
        d.fired.append("MSG-DROP-1")
        return
    d.delivered = (*d.delivered, Delivered(response))

    if response.diverging_epoch is not None:
        # FOLLOWER-DIVERGE-1: truncate from the diverging epoch, as from an epoch answer.
        epoch, end = response.diverging_epoch
        plan = offset_truncation(epoch, end, follower.epoch_cache, follower.leo, follower.hw)
        d.fired.append("FOLLOWER-DIVERGE-1")
        truncate(d, replica_id, plan.offset, rule=plan.rule)
        return

    if response.error == "OFFSET_OUT_OF_RANGE":
        _handle_out_of_range(d, follower, response)
        return
    if response.error is not None:
        # FOLLOWER-FETCH-3: fenced, unknown epoch, not leader: back off and retry.
        d.fired.append("FOLLOWER-FETCH-3")
        return

    # FOLLOWER-FETCH-2: append what came, then HW-FOLLOWER-1.
    cache = follower.epoch_cache
    if d.profile.keeps_epoch_cache:
        for offset, record in enumerate(response.records, start=follower.leo):
            cache = epoch_cache.assign(cache, record.epoch, offset)
    follower = evolve(follower, log=follower.log.extend(response.records), epoch_cache=cache)
    d.put(follower)
    d.fired.append("FOLLOWER-FETCH-2")
    set_hw(d, replica_id, max(follower.log_start, hw.follower_hw(response.hw, follower.leo)))
    d.fired.append("HW-FOLLOWER-1")
    if d.profile.follower_raises_log_start:
        # LOG-START-4 (0.11+, KIP-107): after the HW, the leader's log start.
        raise_log_start(d, replica_id, response.log_start)


def _handle_out_of_range(d: Draft, follower: Replica, response: FetchResponse) -> None:
    """The follower resets its fetch offset from a ListOffsets round trip to the leader at
    delivery time (``AbstractFetcherThread.fetchOffsetAndTruncate``), not from the answer.
    FOLLOWER-OOR-4: that leader is down, no longer leads, or (KIP-320) leads another epoch:
    the round trip fails and nothing changes (``handleOutOfRangeError``: retry or fenced).
    FOLLOWER-OOR-1: the leader's log ends below the follower's: truncate to the leader's LEO.
    FOLLOWER-OOR-2: under hw-truncation with unclean election disabled, Kafka 0.10 halts the
    broker instead (``ReplicaFetcherThread.handleOffsetOutOfRange``). FOLLOWER-OOR-3: the
    leader's log starts above the follower's LEO: drop the whole log and start there."""
    leader = d.replicas[d.position[response.src]]
    if (
        not leader.online
        or leader.role is not LEADER
        or (d.profile.fences_request_epochs and leader.leader_epoch != follower.leader_epoch)
    ):
        d.fired.append("FOLLOWER-OOR-4")
        return
    if leader.leo < follower.leo:
        if d.profile.halts_on_out_of_range and not d.config.unclean_leader_election:
            d.fired.append("FOLLOWER-OOR-2")
            broker.crash(d, follower.id)
            return
        truncate(d, follower.id, leader.leo, rule="FOLLOWER-OOR-1")
    elif leader.log_start > follower.leo:
        truncate_fully_and_start_at(d, follower.id, leader.log_start, rule="FOLLOWER-OOR-3")
    else:
        d.fired.append("FOLLOWER-OOR-1")


# --- OffsetsForLeaderEpoch -----------------------------------------------------------


def epoch_request_refused(s: Readable, replica_id: str) -> StepRejected | None:
    """EPOCH-PRE-1: under leader-epoch, only a live follower of a live leader that is
    truncating, with no answer in flight, asks."""
    if not s.config.profile.asks_epoch_before_fetch:
        return StepRejected(
            "EPOCH-PRE-1",
            f"epoch_request: OffsetsForLeaderEpoch is sent only under leader-epoch "
            f"(this partition runs {s.config.generation.value})",
        )
    why = _not_following(s, replica_id, "epoch_request")
    if why is not None:
        return StepRejected("EPOCH-PRE-1", why)
    if s.replicas[s.config.position[replica_id]].fetch_state is not TRUNCATING:
        return StepRejected("EPOCH-PRE-1", f"epoch_request: replica {replica_id} is not truncating")
    if any(r.dst == replica_id for r in s.epoch_responses):
        return StepRejected("EPOCH-PRE-1", f"epoch_request: replica {replica_id} already has one in flight")
    return None


def send_epoch_request(d: Draft, replica_id: str) -> None:
    """EPOCH-PRE-1: under leader-epoch, a truncating follower asks its leader for the end
    offset of its own latest epoch (its current leader epoch rides along, KIP-320)."""
    if (refused := epoch_request_refused(d, replica_id)) is not None:
        raise refused
    follower = d.replicas[d.position[replica_id]]
    d.fired.append("EPOCH-PRE-1")
    latest = epoch_cache.latest_epoch(follower.epoch_cache)
    if latest is None:  # EPOCH-PRE-2: no epoch in the log, so no request
        _truncate_to_hw_locally(d, follower)
        return
    handle_epoch_request(d, cast(str, follower.leader), replica_id, latest, follower.leader_epoch, follower.incarnation)


def _truncate_to_hw_locally(d: Draft, follower: Replica) -> None:
    """EPOCH-PRE-2: a follower whose log has no epoch asks nobody (2.1+
    ``AbstractFetcherThread.fetchTruncatingPartitions``: ``latestEpoch`` is None, so
    ``truncateToHighWatermark``). Its own outcome, "no epoch: truncate to the HW", is put in
    flight as the leader's undefined answer would read, unfenced; delivering it is
    TRUNC-EPOCH-1, and a fetcher session that ends first drops it (MSG-DROP-1)."""
    d.fired.append("EPOCH-PRE-2")
    d.epoch_responses = (
        *d.epoch_responses,
        EpochResponse(
            dst=follower.id,
            src=cast(str, follower.leader),
            request_epoch=follower.leader_epoch,
            requested_epoch=None,
            error=None,
            epoch=epoch_cache.UNDEFINED_EPOCH,
            end_offset=epoch_cache.UNDEFINED_OFFSET,
            incarnation=follower.incarnation,
        ),
    )


def deliver_epoch_refused(s: Readable, replica_id: str) -> StepRejected | None:
    """EPOCH-DELIVER-PRE-1: an OffsetsForLeaderEpoch answer is in flight to ``replica_id``."""
    if not any(r.dst == replica_id for r in s.epoch_responses):
        return StepRejected("EPOCH-DELIVER-PRE-1", f"deliver_epoch: no epoch response is in flight to {replica_id}")
    return None


def deliver_epoch(d: Draft, replica_id: str) -> None:
    """EPOCH-FOLLOWER-1/2: the follower truncates by the answer; done when complete."""
    if (refused := deliver_epoch_refused(d, replica_id)) is not None:
        raise refused
    response = next(r for r in d.epoch_responses if r.dst == replica_id)
    d.epoch_responses = tuple([r for r in d.epoch_responses if r is not response])
    follower = d.replicas[d.position[replica_id]]
    if not reachable(d, replica_id, response.incarnation, response.src, response.request_epoch):
        d.delivered = (*d.delivered, Delivered(response, dropped=True))
        d.fired.append("MSG-DROP-1")
        return
    d.delivered = (*d.delivered, Delivered(response))
    if response.error is not None:
        # EPOCH-FOLLOWER-1: fenced or unknown epoch, not leader: stay truncating, retry.
        d.fired.append("EPOCH-FOLLOWER-1")
        return
    plan = offset_truncation(response.epoch, response.end_offset, follower.epoch_cache, follower.leo, follower.hw)
    d.fired.append("EPOCH-FOLLOWER-2")
    truncate(d, replica_id, plan.offset, rule=plan.rule)
    if plan.completed:
        d.put(evolve(d.replicas[d.position[replica_id]], fetch_state=FETCHING))
