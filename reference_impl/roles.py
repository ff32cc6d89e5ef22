"""A broker taking the role a LeaderAndIsr (or its restart) gives it: leader (LAI-2) or
follower (LAI-3). Shared by the controller and the broker's restart."""

from __future__ import annotations

from . import epoch_cache
from .draft import Draft
from .hw_advance import maybe_increment_hw
from .replica_ops import truncate
from .state import FETCHING, FOLLOWER, LEADER, NO_ROLE, TRUNCATING, FollowerProgress
from .values import evolve


def become_leader(d: Draft, replica_id: str, epoch: int, isr: tuple[str, ...]) -> None:
    """LAI-2: the replica starts leading at ``epoch``.

    Epoch generations record ``(epoch, LEO)`` in the cache at once (KIP-279, so a
    follower with later-epoch entries can still truncate right). The leader's view of
    each follower is reset (``Replica.resetReplicaState``; 2.x ``resetLastCaughtUpTime``
    then ``updateFetchState`` with unknown offsets): ISR members caught up now, others
    never. A new leader knows neither a follower's LEO nor its previous fetch (-1, time
    0), so only a fetch from now on makes a follower outside the ISR caught up. A
    re-elected leader keeps the LEOs and takes the previous fetch as made at its LEO now,
    from 3.3 only for ISR members (``reelection_forgets_out_of_sync_fetch``). Then the
    HW may move, since the ISR may be down to the leader alone. ``isr``: the LeaderAndIsr's,
    the one the leader knows from now on (PRODUCE-2: ``Replica.isr`` when a newer epoch is
    already on its way).
    """
    replica = d.replicas[d.position[replica_id]]
    now = d.clock_ms
    was_leader = replica.role is LEADER
    cache = replica.epoch_cache
    if d.profile.keeps_epoch_cache:
        cache = epoch_cache.assign(cache, epoch, replica.leo)
        d.fired.append("EPOCH-CACHE-1")
    leo = replica.log.end
    # FollowerProgress(replica, remote_leo, last_caught_up_ms, last_fetch_leader_leo,
    # last_fetch_ms, broker_epoch), positionally: this runs on every election. A re-elected
    # leader keeps the broker epoch of each follower's last fetch; a new one has none.
    if was_leader:
        forgets = d.profile.reelection_forgets_out_of_sync_fetch
        progress = tuple(
            [
                FollowerProgress(
                    p.replica,
                    p.remote_leo,
                    now if p.replica in isr else None,
                    leo,
                    now if p.replica in isr or not forgets else None,
                    p.broker_epoch,
                )
                for p in replica.progress
            ]
        )
    else:
        progress = tuple(
            [
                FollowerProgress(other, None, now if other in isr else None, None, None)
                for other in d.config.replicas
                if other != replica_id
            ]
        )
    d.put(
        evolve(
            replica,
            role=LEADER,
            leader=replica_id,
            leader_epoch=epoch,
            epoch_cache=cache,
            progress=progress,
            isr=isr,
        )
    )
    d.fired.append("LAI-2")
    maybe_increment_hw(d, replica_id)


def become_follower(d: Draft, replica_id: str, leader_id: str, epoch: int) -> None:
    """LAI-3: the replica follows ``leader_id`` at ``epoch``.

    hw-truncation: if the leader changed, it truncates to its own HW (TRUNC-HW-1).
    leader-epoch: it must ask OffsetsForLeaderEpoch first (fetch state ``truncating``).
    diverging-epoch: it fetches at once; the leader reports any divergence.
    """
    replica = d.replicas[d.position[replica_id]]
    leader_changed = replica.leader != leader_id or replica.role is not FOLLOWER
    profile = d.profile
    fetch_state = TRUNCATING if profile.asks_epoch_before_fetch else FETCHING
    d.put(
        evolve(
            replica,
            role=FOLLOWER,
            leader=leader_id,
            leader_epoch=epoch,
            fetch_state=fetch_state,
            progress=(),
        )
    )
    d.fired.append("LAI-3")
    if profile.truncates_to_hw_on_follow and leader_changed:
        truncate(d, replica_id, replica.hw, rule="TRUNC-HW-1")


def become_leaderless(d: Draft, replica_id: str, epoch: int) -> None:
    """LAI-4 (KRaft): told that the partition has no leader at ``epoch`` (CTRL-ELECT-3), the
    broker neither leads nor fetches until a later LeaderAndIsr names a leader. (A ZooKeeper
    broker ignores such a request: ``controller.apply_leader_and_isr``.)"""
    replica = d.replicas[d.position[replica_id]]
    d.put(
        evolve(
            replica,
            role=NO_ROLE,
            leader=None,
            leader_epoch=epoch,
            fetch_state=FETCHING,
            progress=(),
        )
    )
    d.fired.append("LAI-4")
