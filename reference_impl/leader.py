"""What a leader does: handle fetches and epoch queries, keep the ISR, advance the HW.

Each public function is one action of the spec, named actor + verb; guards come first,
then new values, then one ``evolve``. Rule ids in comments and ``fire`` calls match
``spec/replication.md``.
"""

from __future__ import annotations

from typing import Any

from . import epoch_cache, hw
from . import log as logmod
from .config import Generation
from .log import Record
from .messages import EpochResponse, FetchResponse, ParkedFetch
from .purgatory import maybe_complete_produces
from .replica_ops import set_hw
from .state import FollowerProgress, Replica, Role, State
from .values import evolve


def is_current_leader(state: State, replica: Replica) -> bool:
    """A live replica that believes it leads, in the epoch the controller has now."""
    return (
        replica.online
        and replica.role is Role.LEADER
        and replica.leader_epoch == state.controller.epoch
        and state.controller.leader == replica.id
    )


# --- HW ------------------------------------------------------------------------------


def counted_leos(state: State, leader: Replica) -> list[int | None]:
    """HW-LEADER-2: the LEOs that bound the leader's HW.

    hw-truncation (0.10 ``Partition.maybeIncrementLeaderHW``): the leader and the ISR.
    Epoch generations (0.11+): also followers caught up within ``replica.lag.time.max.ms``
    that are not (yet) in the ISR, so a catching-up follower is not outrun.
    """
    isr = state.controller.isr
    lag = state.config.replica_lag_time_max_ms
    leos: list[int | None] = [leader.leo]
    for progress in leader.progress:
        in_isr = progress.replica in isr
        caught_up = (
            state.config.generation.uses_epochs
            and progress.last_caught_up_ms is not None
            and state.clock_ms - progress.last_caught_up_ms <= lag
        )
        if in_isr or caught_up:
            leos.append(progress.remote_leo)
    return leos


def maybe_increment_hw(state: State, leader_id: str) -> State:
    """HW-LEADER-1: the leader's HW becomes max(HW, min(counted LEOs)); then any
    acks=all produce whose offset is now below the HW completes (PRODUCE-5)."""
    leader = state.replica(leader_id)
    if not leader.online or leader.role is not Role.LEADER:
        return state
    new_hw = hw.leader_hw(leader.hw, counted_leos(state, leader))
    if new_hw == leader.hw:
        return state
    state = set_hw(state, leader_id, new_hw).fire("HW-LEADER-1", "HW-LEADER-2")
    return maybe_complete_produces(state, leader_id)


# --- ISR -----------------------------------------------------------------------------


def maybe_expand_isr(state: State, leader_id: str, follower_id: str) -> State:
    """ISR-EXPAND-1: a follower outside the ISR whose LEO reached the leader's HW joins.
    ISR-EXPAND-2 (epoch generations, KAFKA-7128): its LEO must also have reached the
    start offset of the leader's current epoch."""
    leader = state.replica(leader_id)
    if not is_current_leader(state, leader) or follower_id in state.controller.isr:
        return state
    follower_leo = leader.follower(follower_id).remote_leo
    if follower_leo is None or follower_leo < leader.hw:
        return state
    rules = ["ISR-EXPAND-1"]
    if state.config.generation.uses_epochs:
        epoch_start = next(
            (start for epoch, start in leader.epoch_cache if epoch == leader.leader_epoch),
            None,
        )
        if epoch_start is None or follower_leo < epoch_start:
            return state
        rules.append("ISR-EXPAND-2")
    new_isr = tuple(r for r in state.config.replicas if r in state.controller.isr or r == follower_id)
    return evolve(state, controller=evolve(state.controller, isr=new_isr)).fire(*rules)


def out_of_sync_followers(state: State, leader: Replica) -> list[str]:
    """ISR-SHRINK-1 (hw-truncation, 0.10): not caught up for more than the lag time.
    ISR-SHRINK-2 (epoch generations, 2.x ``isFollowerOutOfSync``): and its LEO differs
    from the leader's."""
    lag = state.config.replica_lag_time_max_ms
    out = []
    for progress in leader.progress:
        if progress.replica not in state.controller.isr:
            continue
        lagging = progress.last_caught_up_ms is None or state.clock_ms - progress.last_caught_up_ms > lag
        if state.config.generation.uses_epochs:
            lagging = lagging and progress.remote_leo != leader.leo
        if lagging:
            out.append(progress.replica)
    return out


def maybe_shrink_isr(state: State, leader_id: str) -> State:
    """ISR-SHRINK-*: the leader's periodic ``isr-expiration`` task drops lagging followers,
    then retries the HW (a smaller ISR may let it advance)."""
    leader = state.replica(leader_id)
    if not is_current_leader(state, leader):
        return state
    lagging = out_of_sync_followers(state, leader)
    if not lagging:
        return state
    rule = "ISR-SHRINK-2" if state.config.generation.uses_epochs else "ISR-SHRINK-1"
    new_isr = tuple(r for r in state.controller.isr if r not in lagging)
    state = evolve(state, controller=evolve(state.controller, isr=new_isr)).fire(rule)
    return maybe_increment_hw(state, leader_id)


# --- fetch ---------------------------------------------------------------------------


def fencing_error(receiver: Replica, request_epoch: int, uses_epochs: bool) -> str | None:
    """FETCH-LEADER-1 / EPOCH-LEADER-1: KIP-320 current-epoch fencing, then leadership.

    Epoch generations compare the request's current leader epoch with the receiver's
    (``Partition.localLogWithEpochOrThrow``) before checking it leads."""
    if uses_epochs:
        if request_epoch < receiver.leader_epoch:
            return "FENCED_LEADER_EPOCH"
        if request_epoch > receiver.leader_epoch:
            return "UNKNOWN_LEADER_EPOCH"
    if receiver.role is not Role.LEADER:
        return "NOT_LEADER_OR_FOLLOWER"
    return None


def _update_follower_progress(state: State, leader_id: str, follower_id: str, fetch_offset: int) -> State:
    """FETCH-LEADER-5: record the follower's fetch (remote LEO, caught-up time)."""
    leader = state.replica(leader_id)
    now = state.clock_ms
    old = leader.follower(follower_id)
    caught_up = old.last_caught_up_ms
    if state.config.generation.uses_epochs:
        # 2.x Replica.updateFetchState: caught up to the LEO now, or to the LEO the
        # leader had at the previous fetch (then as of that fetch's time).
        if fetch_offset >= leader.leo:
            caught_up = now if caught_up is None else max(caught_up, now)
            rule = "ISR-CAUGHT-UP-2"
        elif old.last_fetch_leader_leo is not None and fetch_offset >= old.last_fetch_leader_leo:
            assert old.last_fetch_ms is not None
            caught_up = old.last_fetch_ms if caught_up is None else max(caught_up, old.last_fetch_ms)
            rule = "ISR-CAUGHT-UP-2"
        else:
            rule = ""
    else:
        # 0.10 Replica.updateLogReadResult: caught up only when it read to the log end.
        rule = ""
        if fetch_offset >= leader.leo:
            caught_up = now
            rule = "ISR-CAUGHT-UP-1"
    new = FollowerProgress(
        replica=follower_id,
        remote_leo=fetch_offset,
        last_caught_up_ms=caught_up,
        last_fetch_leader_leo=leader.leo,
        last_fetch_ms=now,
    )
    progress = tuple(new if p.replica == follower_id else p for p in leader.progress)
    state = state.with_replica(evolve(leader, progress=progress)).fire("FETCH-LEADER-5")
    return state.fire(rule) if rule else state


def reachable(state: State, dst: str, incarnation: int, src: str, request_epoch: int) -> bool:
    """MSG-DROP-1: an answer reaches only the fetcher session that asked: the same live
    incarnation of the broker, still following ``src`` in ``request_epoch``. (A broker
    that restarts has new connections; one that changes leader or epoch replaces its
    fetcher, and the old one's answers go nowhere.)"""
    replica = state.replica(dst)
    return (
        replica.online
        and replica.incarnation == incarnation
        and replica.role is Role.FOLLOWER
        and replica.leader == src
        and replica.leader_epoch == request_epoch
    )


def drop_unreachable_answers(state: State, replica_id: str) -> State:
    """MSG-DROP-1: after a broker's role, leader or epoch changed, answers in flight to
    its old fetcher session are discarded."""
    keep_fetch = tuple(
        r
        for r in state.fetch_responses
        if r.dst != replica_id or reachable(state, r.dst, r.incarnation, r.src, r.request_epoch)
    )
    keep_epoch = tuple(
        r
        for r in state.epoch_responses
        if r.dst != replica_id or reachable(state, r.dst, r.incarnation, r.src, r.request_epoch)
    )
    if len(keep_fetch) == len(state.fetch_responses) and len(keep_epoch) == len(state.epoch_responses):
        return state
    return evolve(state, fetch_responses=keep_fetch, epoch_responses=keep_epoch).fire("MSG-DROP-1")


def _respond(state: State, response: FetchResponse) -> State:
    """Put a fetch response in flight, unless its fetcher session is gone (MSG-DROP-1)."""
    if not reachable(state, response.dst, response.incarnation, response.src, response.request_epoch):
        return state.fire("MSG-DROP-1")
    return evolve(state, fetch_responses=(*state.fetch_responses, response))


def handle_fetch(
    state: State,
    leader_id: str,
    follower_id: str,
    fetch_offset: int,
    request_epoch: int,
    last_fetched_epoch: int | None,
    incarnation: int,
    max_records: int | None = None,
) -> State:
    """Leader ``leader_id`` handles a fetch from ``follower_id`` at ``fetch_offset``."""
    leader = state.replica(leader_id)
    gen = state.config.generation
    # The request as the purgatory would hold it; every answer is addressed from it.
    request = ParkedFetch(
        follower=follower_id,
        leader=leader_id,
        request_epoch=request_epoch,
        fetch_offset=fetch_offset,
        deadline_ms=state.clock_ms + state.config.replica_fetch_wait_max_ms,
        incarnation=incarnation,
        max_records=max_records,
    )

    error = fencing_error(leader, request_epoch, gen.uses_epochs)
    if error is not None:
        return _respond(state.fire("FETCH-LEADER-1"), _answer(request, hw=leader.hw, error=error))

    hw_at_read = leader.hw  # FETCH-LEADER-3: sampled before this fetch updates anything

    if gen is Generation.DIVERGING_EPOCH and last_fetched_epoch is not None:
        # FETCH-LEADER-2: Partition.readRecords compares the follower's last fetched
        # epoch with the leader's cache; a divergence is answered instead of records,
        # and the follower's fetch state is left alone.
        epoch, end = epoch_cache.end_offset_for(leader.epoch_cache, last_fetched_epoch, leader.leo)
        state = state.fire("FETCH-LEADER-2")
        if epoch < last_fetched_epoch or end < fetch_offset:
            return _respond(state, _answer(request, hw=hw_at_read, diverging_epoch=(epoch, end)))

    if fetch_offset > leader.leo:
        # FETCH-LEADER-4: the follower asks beyond the leader's log.
        answer = _answer(request, hw=leader.hw, error="OFFSET_OUT_OF_RANGE", leader_leo=leader.leo)
        return _respond(state.fire("FETCH-LEADER-4"), answer)

    records = logmod.read(leader.log, fetch_offset, _read_end(fetch_offset, max_records))
    previous_leo = leader.follower(follower_id).remote_leo
    state = state.fire("FETCH-LEADER-3")
    state = _update_follower_progress(state, leader_id, follower_id, fetch_offset)
    state = maybe_expand_isr(state, leader_id, follower_id)
    # HW-LEADER-1: 2.7+ retries the HW only when the follower's LEO moved
    # (Partition.updateFollowerFetchState); 0.10 and 0.11 retry on every fetch.
    if gen is not Generation.DIVERGING_EPOCH or previous_leo != fetch_offset:
        state = maybe_increment_hw(state, leader_id)

    if not records:
        # FETCH-PARK-1: nothing to send (fetch.min.bytes = 1): park in purgatory.
        return evolve(state, parked_fetches=(*state.parked_fetches, request)).fire("FETCH-PARK-1")
    return _respond(state, _answer(request, records=records, hw=hw_at_read))


def _answer(request: ParkedFetch, *, hw: int, records: tuple[Record, ...] = (), **fields: Any) -> FetchResponse:
    """A fetch response addressed back to the session that sent ``request``."""
    return FetchResponse(
        dst=request.follower,
        src=request.leader,
        request_epoch=request.request_epoch,
        fetch_offset=request.fetch_offset,
        records=records,
        hw=hw,
        incarnation=request.incarnation,
        **fields,
    )


def _read_end(fetch_offset: int, max_records: int | None) -> int | None:
    """FETCH-LEADER-3: a response carries at most ``max_records`` records."""
    return None if max_records is None else fetch_offset + max_records


def complete_parked_fetch(state: State, parked: ParkedFetch, rule: str) -> State:
    """FETCH-PARK-2/3: a parked fetch completes; it reads the log and the HW *now*
    (``DelayedFetch.onComplete`` re-reads) without updating the follower's progress again."""
    state = evolve(state, parked_fetches=tuple(p for p in state.parked_fetches if p != parked))
    leader = state.replica(parked.leader)
    records = logmod.read(leader.log, parked.fetch_offset, _read_end(parked.fetch_offset, parked.max_records))
    return _respond(state.fire(rule), _answer(parked, records=records, hw=leader.hw))


def wake_parked_fetches(state: State, leader_id: str) -> State:
    """FETCH-PARK-2: after an append, parked fetches that now have data complete."""
    leader = state.replica(leader_id)
    for parked in state.parked_fetches:
        if parked.leader == leader_id and leader.leo > parked.fetch_offset:
            state = complete_parked_fetch(state, parked, "FETCH-PARK-2")
    return state


def abort_parked_fetches(state: State, leader_id: str, *, error: str | None) -> State:
    """FETCH-PARK-4: the leader stops leading. Its parked fetches complete with ``error``
    (DelayedFetch case A), or vanish if ``error`` is None (the broker crashed)."""
    mine = [p for p in state.parked_fetches if p.leader == leader_id]
    if not mine:
        return state
    state = evolve(state, parked_fetches=tuple(p for p in state.parked_fetches if p.leader != leader_id))
    state = state.fire("FETCH-PARK-4")
    if error is None:
        return state
    leader = state.replica(leader_id)
    for parked in mine:
        state = _respond(state, _answer(parked, hw=leader.hw, error=error))
    return state


# --- OffsetsForLeaderEpoch -----------------------------------------------------------


def handle_epoch_request(
    state: State,
    leader_id: str,
    follower_id: str,
    requested_epoch: int | None,
    request_epoch: int,
    incarnation: int,
) -> State:
    """EPOCH-LEADER-1/2: fence, then answer with ``end_offset_for`` (EPOCH-CACHE-3)."""
    leader = state.replica(leader_id)
    error = fencing_error(leader, request_epoch, True)
    if error is not None:
        epoch, end = epoch_cache.UNDEFINED_EPOCH, epoch_cache.UNDEFINED_OFFSET
        state = state.fire("EPOCH-LEADER-1")
    else:
        epoch, end = epoch_cache.end_offset_for(leader.epoch_cache, requested_epoch, leader.leo)
        state = state.fire("EPOCH-LEADER-2", "EPOCH-CACHE-3")
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
    if not reachable(state, follower_id, incarnation, leader_id, request_epoch):
        return state.fire("MSG-DROP-1")
    return evolve(state, epoch_responses=(*state.epoch_responses, response))


# --- becoming leader -----------------------------------------------------------------


def become_leader(state: State, replica_id: str, epoch: int) -> State:
    """LAI-2: the replica starts leading at ``epoch``.

    Epoch generations record ``(epoch, LEO)`` in the cache at once (KIP-279, so a
    follower with later-epoch entries can still truncate right). The leader's view of
    each follower is reset: remote LEO unknown (-1) for a new leader, ISR members
    counted as caught up now (``Replica.resetReplicaState``). Then the HW may move, since
    the ISR may be down to the leader alone.
    """
    replica = state.replica(replica_id)
    now = state.clock_ms
    was_leader = replica.role is Role.LEADER
    cache = replica.epoch_cache
    if state.config.generation.uses_epochs:
        cache = epoch_cache.assign(cache, epoch, replica.leo)
        state = state.fire("EPOCH-CACHE-1")
    progress = []
    for other in state.config.replicas:
        if other == replica_id:
            continue
        old_leo = replica.follower(other).remote_leo if was_leader else None
        progress.append(
            FollowerProgress(
                replica=other,
                remote_leo=old_leo,
                last_caught_up_ms=now if other in state.controller.isr else None,
                last_fetch_leader_leo=replica.leo,
                last_fetch_ms=now,
            )
        )
    state = state.with_replica(
        evolve(
            replica,
            role=Role.LEADER,
            leader=replica_id,
            leader_epoch=epoch,
            epoch_cache=cache,
            progress=tuple(progress),
        )
    ).fire("LAI-2")
    return maybe_increment_hw(state, replica_id)
