"""The in-sync replica set, as the leader keeps it: followers join (ISR-EXPAND-*) when a
fetch shows them caught up, and the periodic ``isr-expiration`` task drops the lagging
ones (ISR-SHRINK-*)."""

from __future__ import annotations

from . import epoch_cache
from .alter_partition import change_isr, changes_isr, leader_isr, pending
from .draft import Draft, Readable
from .errors import StepRejected
from .hw_advance import maybe_increment_hw
from .state import FollowerProgress, Replica


def maybe_expand_isr(d: Draft, leader_id: str, follower_id: str) -> None:
    """ISR-EXPAND-1: a follower outside the ISR whose LEO reached the leader's HW joins.
    ISR-EXPAND-2 (epoch generations, KAFKA-7128): its LEO must also have reached the
    start offset of the leader's current epoch. Only a leader that runs ISR changes
    (``changes_isr``, ISR-ALTER-5 / ISR-WRITE-1) with none pending (ISR-ALTER-1)."""
    leader = d.replicas[d.position[leader_id]]
    if not changes_isr(d, leader) or follower_id in leader_isr(d, leader) or pending(d, leader_id):
        return
    follower_leo = leader.follower(follower_id).remote_leo
    # ISR-EXPAND-1: only a follower whose LEO reached the leader's HW joins.
    if follower_leo is None or follower_leo < leader.hw:
        return
    rules = ["ISR-EXPAND-1"]
    # ISR-EXPAND-2: and the start offset of the leader's current epoch (KAFKA-7128).
    if d.profile.isr_join_needs_epoch_start:
        epoch_start = epoch_cache.start_of(leader.epoch_cache, leader.leader_epoch)
        if epoch_start is None or follower_leo < epoch_start:
            return
        rules.append("ISR-EXPAND-2")
    isr = leader_isr(d, leader)  # the ISR it knows (a stale leader: the one of its epoch)
    new_isr = tuple([r for r in d.config.replicas if r in isr or r == follower_id])
    d.fired.extend(rules)
    change_isr(d, leader_id, new_isr)


def out_of_sync_from(d: Draft, leader: Replica, progress: FollowerProgress) -> int | None:
    """From which time (ms) on the follower ``progress`` describes is out of sync with
    ``leader``, or None if it is not at any time. The one statement of the rule: the expiry
    check (``out_of_sync_followers``) and the clock's search for the next check that drops
    someone (``clock._next_isr_check``) both call it.

    ISR-SHRINK-1 (hw-truncation, 0.10): not caught up for more than the lag time.
    ISR-SHRINK-2 (epoch generations, 2.x ``isFollowerOutOfSync``): and its LEO differs
    from the leader's."""
    # ISR-SHRINK-2: a follower at the leader's LEO is not out of sync.
    if d.profile.shrink_spares_follower_at_leo and progress.remote_leo == leader.leo:
        return None
    # ISR-SHRINK-1: not caught up for more than the lag time.
    if progress.last_caught_up_ms is None:
        return 0
    return progress.last_caught_up_ms + d.config.replica_lag_time_max_ms + 1


def out_of_sync_followers(d: Draft, leader: Replica) -> list[str]:
    """The ISR followers out of sync now (``out_of_sync_from``)."""
    out = []
    isr = leader_isr(d, leader)
    for progress in leader.progress:
        if progress.replica not in isr:
            continue
        since = out_of_sync_from(d, leader, progress)
        if since is not None and d.clock_ms >= since:
            out.append(progress.replica)
    return out


def maybe_shrink_isr(d: Draft, leader_id: str) -> None:
    """ISR-SHRINK-*: the leader's periodic ``isr-expiration`` task drops lagging followers,
    then retries the HW (a smaller ISR may let it advance)."""
    leader = d.replicas[d.position[leader_id]]
    if not changes_isr(d, leader) or pending(d, leader_id):
        return
    lagging = out_of_sync_followers(d, leader)
    if not lagging:
        return
    rule = "ISR-SHRINK-2" if d.profile.shrink_spares_follower_at_leo else "ISR-SHRINK-1"
    new_isr = tuple([r for r in leader_isr(d, leader) if r not in lagging])
    d.fired.append(rule)
    if change_isr(d, leader_id, new_isr):
        maybe_increment_hw(d, leader_id)


def isr_expiration_refused(s: Readable, replica_id: str) -> StepRejected | None:
    """ISR-SHRINK-PRE-1: only a live broker runs its expiry check."""
    if not s.replicas[s.config.position[replica_id]].online:
        return StepRejected("ISR-SHRINK-PRE-1", f"isr_expiration: replica {replica_id} is offline")
    return None


def run_isr_expiration(d: Draft, replica_id: str) -> None:
    """ISR-SHRINK-3: the ``isr_expiration`` step runs the expiry check on one broker now, as
    Kafka's tests call ``Partition.maybeShrinkIsr``; on a broker that runs no ISR changes
    (``changes_isr``: not the current leader, or under diverging-epoch not a leader in its
    own view) it finds nothing to do."""
    if (refused := isr_expiration_refused(d, replica_id)) is not None:
        raise refused
    d.fired.append("ISR-SHRINK-3")
    maybe_shrink_isr(d, replica_id)
