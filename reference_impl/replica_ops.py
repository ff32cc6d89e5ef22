"""Small updates to one replica that several actors share: HW writes and truncation.

Kept apart so that "set the HW" (with its checkpoint rule) and "truncate the log" (with
its cache and HW consequences) each have exactly one implementation.
"""

from __future__ import annotations

from . import epoch_cache
from .draft import Draft
from .values import evolve


def set_hw(d: Draft, replica_id: str, new_hw: int) -> None:
    """Write a replica's in-memory HW; CKPT-1: with a checkpoint interval of 0 the
    checkpoint file is written on every change (the seeds' assumption)."""
    replica = d.replica(replica_id)
    if new_hw == replica.hw:
        return
    if d.config.replica_high_watermark_checkpoint_interval_ms == 0:
        d.put(evolve(replica, hw=new_hw, checkpoint_hw=new_hw))
        d.fire("CKPT-1")
        return
    d.put(evolve(replica, hw=new_hw))


def truncate(d: Draft, replica_id: str, offset: int, *, rule: str) -> None:
    """TRUNC-1: cut the log at ``offset``, drop epoch-cache entries at or above it,
    and clamp the HW to the new LEO (Kafka ``Log.truncateTo``)."""
    replica = d.replica(replica_id)
    d.fire(rule)
    if offset >= replica.leo:
        return
    new_log = replica.log.truncate(offset)
    new_cache = epoch_cache.truncate_from_end(replica.epoch_cache, len(new_log))
    d.put(evolve(replica, log=new_log, epoch_cache=new_cache))
    d.fire("TRUNC-1")
    if new_cache != replica.epoch_cache:
        d.fire("EPOCH-CACHE-2")
    if replica.hw > len(new_log):
        set_hw(d, replica_id, len(new_log))
