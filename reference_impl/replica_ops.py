"""Small updates to one replica that several actors share: HW writes and truncation.

Kept apart so that "set the HW" (with its checkpoint rule) and "truncate the log" (with
its cache and HW consequences) each have exactly one implementation.
"""

from __future__ import annotations

from . import epoch_cache
from . import log as logmod
from .state import State
from .values import evolve


def set_hw(state: State, replica_id: str, new_hw: int) -> State:
    """Write a replica's in-memory HW; CKPT-1: with a checkpoint interval of 0 the
    checkpoint file is written on every change (the seeds' assumption)."""
    replica = state.replica(replica_id)
    if new_hw == replica.hw:
        return state
    if state.config.replica_high_watermark_checkpoint_interval_ms == 0:
        return state.with_replica(evolve(replica, hw=new_hw, checkpoint_hw=new_hw)).fire("CKPT-1")
    return state.with_replica(evolve(replica, hw=new_hw))


def truncate(state: State, replica_id: str, offset: int, *, rule: str) -> State:
    """TRUNC-1: cut the log at ``offset``, drop epoch-cache entries at or above it,
    and clamp the HW to the new LEO (Kafka ``Log.truncateTo``)."""
    replica = state.replica(replica_id)
    state = state.fire(rule)
    if offset >= replica.leo:
        return state
    new_log = logmod.truncate_to(replica.log, offset)
    new_cache = epoch_cache.truncate_from_end(replica.epoch_cache, len(new_log))
    state = state.with_replica(evolve(replica, log=new_log, epoch_cache=new_cache)).fire("TRUNC-1")
    if new_cache != replica.epoch_cache:
        state = state.fire("EPOCH-CACHE-2")
    if replica.hw > len(new_log):
        state = set_hw(state, replica_id, len(new_log))
    return state
