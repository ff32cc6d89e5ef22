"""A leader answering OffsetsForLeaderEpoch (EPOCH-LEADER-1/2), leader-epoch only."""

from __future__ import annotations

from . import epoch_cache
from .draft import Draft
from .leader_fetch import fencing_error
from .messages import EpochResponse
from .network import reachable


def handle_epoch_request(
    d: Draft,
    leader_id: str,
    follower_id: str,
    requested_epoch: int | None,
    request_epoch: int,
    incarnation: int,
) -> None:
    """EPOCH-LEADER-1/2: fence, then answer with ``end_offset_for`` (EPOCH-CACHE-3)."""
    leader = d.replica(leader_id)
    error = fencing_error(leader, request_epoch, True)
    if error is not None:
        epoch, end = epoch_cache.UNDEFINED_EPOCH, epoch_cache.UNDEFINED_OFFSET
        d.fire("EPOCH-LEADER-1")
    else:
        epoch, end = epoch_cache.end_offset_for(leader.epoch_cache, requested_epoch, leader.leo)
        d.fire("EPOCH-LEADER-2", "EPOCH-CACHE-3")
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
        d.fire("MSG-DROP-1")
        return
    d.epoch_responses = (*d.epoch_responses, response)
