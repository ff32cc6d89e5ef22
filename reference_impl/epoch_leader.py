"""A leader answering OffsetsForLeaderEpoch: its follower's (EPOCH-LEADER-1/2,
leader-epoch only) and a client's query for a chosen epoch (EPOCH-QUERY-*)."""

from __future__ import annotations

from . import epoch_cache
from .draft import Draft, Readable
from .errors import StepRejected
from .leader_fetch import fencing_error
from .messages import EpochResponse
from .network import reachable
from .state import EpochQueryOutcome


def handle_epoch_request(
    d: Draft,
    leader_id: str,
    follower_id: str,
    requested_epoch: int | None,
    request_epoch: int,
    incarnation: int,
) -> None:
    """EPOCH-LEADER-1/2: fence, then answer with ``end_offset_for`` (EPOCH-CACHE-3)."""
    leader = d.replicas[d.position[leader_id]]
    error = fencing_error(leader, request_epoch, True)
    if error is not None:
        epoch, end = epoch_cache.UNDEFINED_EPOCH, epoch_cache.UNDEFINED_OFFSET
        d.fired.append("EPOCH-LEADER-1")
    else:
        epoch, end = epoch_cache.end_offset_for(leader.epoch_cache, requested_epoch, leader.leo)
        d.fired.extend(("EPOCH-LEADER-2", "EPOCH-CACHE-3"))
    response = EpochResponse(
        dst=follower_id,
        src=leader_id,
        request_epoch=request_epoch,
        requested_epoch=requested_epoch,
        error=error,
        epoch=epoch,
        end_offset=end,
        incarnation=incarnation,
    )
    if not reachable(d, follower_id, incarnation, leader_id, request_epoch):
        d.fired.append("MSG-DROP-1")
        return
    d.epoch_responses = (*d.epoch_responses, response)


def epoch_query_refused(
    s: Readable, replica_id: str, requested_epoch: int, current_epoch: int | None = None
) -> StepRejected | None:
    """EPOCH-QUERY-PRE-1: OffsetsForLeaderEpoch exists (leader-epoch and later) and the
    broker asked is up."""
    if not s.config.profile.keeps_epoch_cache:
        return StepRejected(
            "EPOCH-QUERY-PRE-1",
            f"epoch_query: OffsetsForLeaderEpoch exists from Kafka 0.11 (KIP-101); "
            f"this partition runs {s.config.generation.value}",
        )
    if not s.replicas[s.config.position[replica_id]].online:
        return StepRejected("EPOCH-QUERY-PRE-1", f"epoch_query: replica {replica_id} is offline")
    return None


def answer_epoch_query(d: Draft, replica_id: str, requested_epoch: int, current_epoch: int | None) -> None:
    """EPOCH-QUERY-1/2: any broker asked for the end offset of ``requested_epoch`` answers
    as a leader answers a follower: KIP-320 fencing when the query carries a current
    leader epoch, then ``NOT_LEADER_OR_FOLLOWER`` unless it leads, else
    ``end_offset_for`` (EPOCH-CACHE-3). Source: ``ReplicaManager.lastOffsetForLeaderEpoch``
    / ``Partition.lastOffsetForLeaderEpoch`` (fetchOnlyFromLeader = true). EPOCH-QUERY-3:
    -1 is Kafka's undefined epoch on the wire: as ``current_leader_epoch`` it means none
    (``RequestUtils.getLeaderEpoch``), as ``epoch`` it gets ``(-1, -1)`` and no error."""
    if (refused := epoch_query_refused(d, replica_id, requested_epoch, current_epoch)) is not None:
        raise refused
    replica = d.replicas[d.position[replica_id]]
    if current_epoch == epoch_cache.UNDEFINED_EPOCH:  # EPOCH-QUERY-3: -1 is "no current epoch", no fencing
        current_epoch = None
        d.fired.append("EPOCH-QUERY-3")
    error = fencing_error(replica, current_epoch if current_epoch is not None else 0, current_epoch is not None)
    if error is None and requested_epoch == epoch_cache.UNDEFINED_EPOCH:
        # EPOCH-QUERY-3: the undefined epoch is answered (-1, -1) without an error, whatever the cache
        d.fired.append("EPOCH-QUERY-3")
    if error is not None:
        epoch, end = epoch_cache.UNDEFINED_EPOCH, epoch_cache.UNDEFINED_OFFSET
        d.fired.append("EPOCH-QUERY-1")
    else:
        epoch, end = epoch_cache.end_offset_for(replica.epoch_cache, requested_epoch, replica.leo)
        d.fired.extend(("EPOCH-QUERY-2", "EPOCH-CACHE-3"))
    d.epoch_query = EpochQueryOutcome(
        replica=replica_id, requested_epoch=requested_epoch, error=error, epoch=epoch, end_offset=end
    )
