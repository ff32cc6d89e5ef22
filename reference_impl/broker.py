"""A broker's life: crash and restart.

A crash is a process crash: memory is lost (the in-memory HW, the leader's view of its
followers, parked requests, messages to and from it), the log and the two checkpoint
files (HW, leader epochs) survive. A restart reads them back and asks the controller
who leads (LeaderAndIsr on startup).
"""

from __future__ import annotations

from . import epoch_cache
from .alter_partition import drop_proposals
from .controller import handle_failures
from .draft import Draft, Readable
from .errors import StepRejected
from .fetch_purgatory import abort_parked_fetches
from .purgatory import fail_pending_produces
from .replica_ops import restore_unchecked, truncate
from .roles import become_follower
from .state import FETCHING, NO_ROLE
from .values import evolve


def crash_refused(s: Readable, replica_id: str, unflushed_from: int | None = None) -> StepRejected | None:
    """CRASH-PRE-1: only a live broker crashes, and a power failure loses at most its whole log."""
    replica = s.replicas[s.config.position[replica_id]]
    if not replica.online:
        return StepRejected("CRASH-PRE-1", f"crash: replica {replica_id} is already offline")
    if unflushed_from is not None and unflushed_from > replica.leo:
        return StepRejected(
            "CRASH-PRE-1", f"crash: unflushed_from={unflushed_from} is past {replica_id}'s LEO {replica.leo}"
        )
    return None


def crash(d: Draft, replica_id: str, unflushed_from: int | None = None) -> None:
    """CRASH-1: the broker dies. CRASH-2: with ``unflushed_from``, a power failure also
    loses the log's unflushed tail (log recovery truncates it and the epoch cache)."""
    if (refused := crash_refused(d, replica_id, unflushed_from)) is not None:
        raise refused
    replica = d.replicas[d.position[replica_id]]
    abort_parked_fetches(d, replica_id, error=None)
    fail_pending_produces(d, replica_id, "NETWORK_EXCEPTION", "PRODUCE-6")
    # Its own parked fetches at other leaders stay parked there: that leader does
    # not know; their responses are dropped on arrival (MSG-DROP-1).
    if d.fetch_responses:
        d.fetch_responses = tuple([r for r in d.fetch_responses if r.dst != replica_id])
    if d.epoch_responses:
        d.epoch_responses = tuple([r for r in d.epoch_responses if r.dst != replica_id])
    if d.leader_and_isr:
        d.leader_and_isr = tuple([m for m in d.leader_and_isr if m.dst != replica_id])
    if d.alter_partitions or d.fenced_proposals:
        drop_proposals(d, replica_id)
    d.put(evolve(replica, online=False, role=NO_ROLE, progress=(), fetch_state=FETCHING))
    d.fired.append("CRASH-1")
    if unflushed_from is not None:
        truncate(d, replica_id, unflushed_from, rule="CRASH-2", recovery=True)
        if unflushed_from < replica.leo:
            d.power_failures += 1
            lost_from = d.power_lost_from
            if lost_from is None or unflushed_from < lost_from:
                d.power_lost_from = unflushed_from
        # The HW checkpoint may now point past the log; restart clamps it.


def restart_refused(s: Readable, replica_id: str) -> StepRejected | None:
    """RESTART-PRE-1: only a broker that is down starts again."""
    if s.replicas[s.config.position[replica_id]].online:
        return StepRejected("RESTART-PRE-1", f"restart: replica {replica_id} is online")
    return None


def _epoch_on_start(d: Draft, epoch: int) -> int:
    """The epoch a starting broker knows before any leader is named (RESTART-1): the
    controller's, except a ZooKeeper broker told "no leader" (LAI-4), which keeps the new
    ``Partition``'s ``LeaderAndIsr.initialLeaderEpoch - 1``: no epoch."""
    if d.controller.leader is None and not d.profile.applies_leaderless_leader_and_isr:
        return epoch_cache.UNDEFINED_EPOCH
    return epoch


def restart(d: Draft, replica_id: str) -> None:
    """RESTART-1: the broker starts, HW = its checkpoint (clamped to the LEO), and takes
    the role the controller gives it now. RESTART-2: if the controller had not handled the
    broker's failure yet, it handles it first (CTRL-FAIL-*). RESTART-3: loading the log
    drops the epoch-cache entries that start at or after the recovered LEO."""
    if (refused := restart_refused(d, replica_id)) is not None:
        raise refused
    replica = d.replicas[d.position[replica_id]]
    if d.controller.leader == replica_id:
        # RESTART-2: ZooKeeper 2.2+ (KIP-380) sees a bounced broker by its new broker epoch
        # and runs onBrokerFailure before onBrokerStartup; a broker cannot re-register while
        # its old ZooKeeper session or KRaft heartbeat session is alive, and its end is the
        # failure the controller handles.
        d.fired.append("RESTART-2")
        handle_failures(d, None)
    ctrl = d.controller
    if replica_id in ctrl.down:
        ctrl = evolve(ctrl, down=tuple([r for r in ctrl.down if r != replica_id]))
        d.controller = ctrl
    d.put(
        evolve(
            replica,
            online=True,
            hw=min(replica.checkpoint_hw, replica.leo),
            role=NO_ROLE,
            leader=None,
            leader_epoch=_epoch_on_start(d, ctrl.epoch),
            started_ms=d.clock_ms,
            incarnation=replica.incarnation + 1,
        )
    )
    d.fired.append("RESTART-1")
    restore_unchecked(d, replica_id)  # LOG-START-5: a log start raised since the last checkpoint run
    restarted = d.replicas[d.position[replica_id]]
    loaded = epoch_cache.truncate_from_end(restarted.epoch_cache, restarted.leo)
    # RESTART-3: loading the log drops the cache entries at or above its end, such as an
    # epoch the broker led without writing (LogLoader.load; Log's constructor since 0.11,
    # KAFKA-5099: leaderEpochCache.clearAndFlushLatest(nextOffset)).
    d.put(evolve(restarted, epoch_cache=loaded))
    if loaded != restarted.epoch_cache:
        d.fired.extend(("RESTART-3", "EPOCH-CACHE-2"))
    if ctrl.leader is not None:
        become_follower(d, replica_id, ctrl.leader, ctrl.epoch)
