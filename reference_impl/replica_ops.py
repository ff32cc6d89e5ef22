"""Small updates to one replica that several actors share: HW writes and truncation.

Kept apart so that "set the HW" (with its checkpoint rule) and "truncate the log" (with
its cache and HW consequences) each have exactly one implementation.
"""

from __future__ import annotations

from . import epoch_cache
from .draft import Draft
from .given import log_starting_at
from .state import Replica
from .values import evolve


def set_hw(d: Draft, replica_id: str, new_hw: int) -> None:
    """Write a replica's in-memory HW; CKPT-1: with a checkpoint interval of 0 the
    checkpoint file is written on every change (the seeds' assumption)."""
    replica = d.replicas[d.position[replica_id]]
    if new_hw == replica.hw:
        return
    if d.config.replica_high_watermark_checkpoint_interval_ms == 0:
        d.put(evolve(replica, hw=new_hw, checkpoint_hw=new_hw))
        d.fired.append("CKPT-1")
        return
    d.put(evolve(replica, hw=new_hw))


def truncate(d: Draft, replica_id: str, offset: int, *, rule: str, recovery: bool = False) -> None:
    """TRUNC-1: cut the log at ``offset``, drop epoch-cache entries at or above it,
    and clamp the HW to the new LEO (Kafka ``Log.truncateTo``). LOG-START-2: a cut below
    the log start leaves an empty log that starts at ``offset`` (``truncateFullyAndStartAt``).
    TRUNC-2: a cut at or past the LEO removes no record but still drops the cache entries
    starting at the LEO (an epoch led with no record), except in log recovery (``recovery``,
    CRASH-2), which is not ``Log.truncateTo``."""
    replica = d.replicas[d.position[replica_id]]
    d.fired.append(rule)
    if offset >= replica.leo:
        cache = replica.epoch_cache
        if not recovery and cache and cache[-1][1] >= replica.leo:
            # TRUNC-2 (KAFKA-10706): without this a follower that led an epoch without
            # writing keeps asking for it and never completes its truncation (KIP-279)
            d.put(evolve(replica, epoch_cache=epoch_cache.truncate_from_end(cache, replica.leo)))
            d.fired.extend(("TRUNC-2", "EPOCH-CACHE-2"))
        return
    new_log = replica.log.truncate(offset)
    new_cache = epoch_cache.truncate_from_end(replica.epoch_cache, len(new_log))
    if offset < replica.log_start:
        # LOG-START-5: Log.truncateTo deletes every segment; a power failure's recovery
        # (CRASH-2) loses the disk only from ``offset`` on, so what lies below stays.
        below = replica.unchecked_below[: max(0, offset - durable_log_start(replica))] if recovery else ()
        d.put(evolve(replica, log=new_log, epoch_cache=new_cache, log_start=len(new_log), unchecked_below=below))
        d.fired.append("LOG-START-2")
    else:
        d.put(evolve(replica, log=new_log, epoch_cache=new_cache))
    d.fired.append("TRUNC-1")
    if new_cache != replica.epoch_cache:
        d.fired.append("EPOCH-CACHE-2")
    if replica.hw > len(new_log):
        set_hw(d, replica_id, len(new_log))


def truncate_fully_and_start_at(d: Draft, replica_id: str, offset: int, *, rule: str) -> None:
    """LOG-START-3: drop the whole log and start it empty at ``offset`` (Kafka
    ``UnifiedLog.truncateFullyAndStartAt``): no records, an empty epoch cache, HW at ``offset``."""
    replica = d.replicas[d.position[replica_id]]
    d.put(evolve(replica, log=log_starting_at(offset), epoch_cache=(), log_start=offset, unchecked_below=()))
    d.fired.extend((rule, "LOG-START-3"))
    set_hw(d, replica_id, offset)


def durable_log_start(replica: Replica) -> int:
    """LOG-START-5: the log start a restart comes back to, the one in the
    ``log-start-offset-checkpoint`` file (or the first segment's base offset)."""
    return replica.log_start - len(replica.unchecked_below)


def restore_unchecked(d: Draft, replica_id: str) -> None:
    """LOG-START-5: loading the log after a crash (``LogLoader``) starts it at the checkpointed
    log start, so the records a raise hid since the last checkpoint run are back. The epoch
    cache keeps the first entry the raise moved up (EPOCH-CACHE-4 wrote it to
    ``leader-epoch-checkpoint``: 2.6 at once, 4.x from the scheduler straight after), and
    log recovery assigns no epoch at or below the cache's latest (``LogSegment.recover``),
    so the records found again have no entry of their own."""
    replica = d.replicas[d.position[replica_id]]
    hidden = replica.unchecked_below
    if not hidden:
        return
    start = durable_log_start(replica)
    log = log_starting_at(start, hidden + replica.log.read(replica.log_start))
    d.put(evolve(replica, log=log, log_start=start, unchecked_below=()))
    d.fired.append("LOG-START-5")


def raise_log_start(d: Draft, replica_id: str, offset: int) -> None:
    """LOG-START-4: a follower takes the leader's log start from a fetch answer when it is
    above its own (``UnifiedLog.maybeIncrementLogStartOffset``, reason
    ``LeaderOffsetIncremented``): the records below it leave the log and the epoch cache's
    first entry moves up to it (EPOCH-CACHE-4). The HW and the LEO stay: the follower's new
    HW is at least the leader's log start (HW-FOLLOWER-1 with a fetch offset at or above it,
    FETCH-LEADER-4), so Kafka's "larger than the high watermark" refusal cannot arise.
    LOG-START-5: the records it hides stay on disk (``unchecked_below``) until the
    log-start checkpoint task runs (CKPT-3)."""
    replica = d.replicas[d.position[replica_id]]
    if offset <= replica.log_start:
        return
    hidden = replica.unchecked_below + replica.log.read(replica.log_start, offset)  # kept on disk
    replica = evolve(
        replica, log=log_starting_at(offset, replica.log.read(offset)), log_start=offset, unchecked_below=hidden
    )
    d.put(replica)
    d.fired.append("LOG-START-4")
    cache = epoch_cache.truncate_from_start(replica.epoch_cache, offset)
    if cache != replica.epoch_cache:
        d.put(evolve(replica, epoch_cache=cache))
        d.fired.append("EPOCH-CACHE-4")
