"""A leader handling a follower's fetch: fence, check divergence, read, record the
follower's progress, then the ISR and the HW (FETCH-LEADER-*)."""

from __future__ import annotations

from . import epoch_cache, isr
from .draft import Draft
from .fetch_purgatory import read_end
from .hw_advance import maybe_increment_hw
from .messages import ParkedFetch
from .network import answer, respond
from .state import LEADER, FollowerProgress, Replica
from .values import evolve


def fencing_error(receiver: Replica, request_epoch: int, fences_epochs: bool) -> str | None:
    """FETCH-LEADER-1 / EPOCH-LEADER-1: KIP-320 current-epoch fencing, then leadership.

    Epoch generations compare the request's current leader epoch with the receiver's
    (``Partition.localLogWithEpochOrThrow``) before checking it leads."""
    if fences_epochs:
        if request_epoch < receiver.leader_epoch:
            return "FENCED_LEADER_EPOCH"
        if request_epoch > receiver.leader_epoch:
            return "UNKNOWN_LEADER_EPOCH"
    if receiver.role is not LEADER:
        return "NOT_LEADER_OR_FOLLOWER"
    return None


def _update_follower_progress(d: Draft, leader: Replica, follower_id: str, fetch_offset: int) -> None:
    """FETCH-LEADER-5: record the follower's fetch (remote LEO, caught-up time, and the
    broker epoch the fetch carries, Kafka's ``Replica.updateFetchStateOrThrow``: the
    follower's incarnation, which a fetch handled now was sent by, KIP-903)."""
    now = d.clock_ms
    old = leader.follower(follower_id)
    caught_up = old.last_caught_up_ms
    rule = ""
    if fetch_offset >= leader.leo:
        # ISR-CAUGHT-UP-1: caught up to the LEO now (0.10.2 Replica.updateLogReadResult,
        # 2.x updateFetchState, 3.3+ updateFetchStateOrThrow).
        caught_up = now if caught_up is None else max(caught_up, now)
        rule = "ISR-CAUGHT-UP-1"
    elif (
        d.profile.caught_up_from_previous_fetch
        and old.last_fetch_leader_leo is not None
        and old.last_fetch_ms is not None
        and fetch_offset >= old.last_fetch_leader_leo
    ):
        # ISR-CAUGHT-UP-2 (KAFKA-4485, 0.10.2.0): caught up to the LEO the leader had at
        # the previous fetch, so as of that fetch's time.
        caught_up = old.last_fetch_ms if caught_up is None else max(caught_up, old.last_fetch_ms)
        rule = "ISR-CAUGHT-UP-2"
    new = FollowerProgress(
        replica=follower_id,
        remote_leo=fetch_offset,
        last_caught_up_ms=caught_up,
        last_fetch_leader_leo=leader.leo,
        last_fetch_ms=now,
        broker_epoch=d.replicas[d.position[follower_id]].incarnation,
    )
    progress = tuple([new if p.replica == follower_id else p for p in leader.progress])
    d.put(evolve(leader, progress=progress))
    d.fired.append("FETCH-LEADER-5")
    if rule:
        d.fired.append(rule)


def handle_fetch(
    d: Draft,
    leader_id: str,
    follower_id: str,
    fetch_offset: int,
    request_epoch: int,
    last_fetched_epoch: int | None,
    incarnation: int,
    max_records: int | None = None,
    max_wait_ms: int | None = None,
) -> None:
    """Leader ``leader_id`` handles a fetch from ``follower_id`` at ``fetch_offset``.

    ``max_wait_ms`` is the request's max wait (default ``replica.fetch.wait.max.ms``)."""
    leader = d.replicas[d.position[leader_id]]
    profile = d.profile
    # The request as the purgatory would hold it; every answer is addressed from it.
    request = ParkedFetch(
        follower=follower_id,
        leader=leader_id,
        request_epoch=request_epoch,
        fetch_offset=fetch_offset,
        deadline_ms=d.clock_ms + (d.config.replica_fetch_wait_max_ms if max_wait_ms is None else max_wait_ms),
        incarnation=incarnation,
        max_records=max_records,
    )

    error = fencing_error(leader, request_epoch, profile.fences_request_epochs)
    if error is not None:
        # FETCH-LEADER-1: an error answer carries no records and HW / log start -1
        # (ReplicaManager.readFromLocalLog's error case).
        d.fired.append("FETCH-LEADER-1")
        respond(d, answer(request, hw=-1, log_start=-1, error=error))
        return

    hw_at_read = leader.hw  # FETCH-LEADER-3: sampled before this fetch updates anything
    start_at_read = leader.log_start

    if profile.fetch_carries_last_epoch and last_fetched_epoch is not None:
        # FETCH-LEADER-2: Partition.readRecords compares the follower's last fetched
        # epoch with the leader's cache; a divergence is answered instead of records,
        # and the follower's fetch state is left alone.
        epoch, end = epoch_cache.end_offset_for(leader.epoch_cache, last_fetched_epoch, leader.leo)
        d.fired.append("FETCH-LEADER-2")
        if (epoch < last_fetched_epoch or end < fetch_offset) and fetch_offset >= start_at_read:
            respond(d, answer(request, hw=hw_at_read, log_start=start_at_read, diverging_epoch=(epoch, end)))
            return

    if fetch_offset > leader.leo or fetch_offset < leader.log_start:
        # FETCH-LEADER-4: the follower asks beyond the leader's log, or below its log
        # start (checked before a divergence, Partition.readRecords). The answer carries
        # the leader's LEO and log start: the model's stand-in for the ListOffsets
        # requests the follower then sends (AbstractFetcherThread.fetchOffsetAndTruncate).
        d.fired.append("FETCH-LEADER-4")
        respond(
            d,
            answer(
                request,
                hw=-1,
                log_start=-1,
                error="OFFSET_OUT_OF_RANGE",
                leader_leo=leader.leo,
                leader_log_start=leader.log_start,
            ),
        )
        return

    records = leader.log.read(fetch_offset, read_end(fetch_offset, max_records))
    previous_leo = leader.follower(follower_id).remote_leo
    d.fired.append("FETCH-LEADER-3")
    _update_follower_progress(d, leader, follower_id, fetch_offset)
    isr.maybe_expand_isr(d, leader_id, follower_id)
    # HW-LEADER-1: 2.7+ retries the HW only when the follower's LEO moved
    # (Partition.updateFollowerFetchState); 0.10 and 0.11 retry on every fetch.
    if not profile.hw_retry_only_when_leo_moved or previous_leo != fetch_offset:
        maybe_increment_hw(d, leader_id)

    if not records and max_wait_ms == 0:
        # FETCH-LEADER-6: max wait 0 is answered at once, empty (ReplicaManager.fetchMessages:
        # `timeout <= 0` completes the fetch without waiting).
        d.fired.append("FETCH-LEADER-6")
        respond(d, answer(request, hw=hw_at_read, log_start=start_at_read))
        return
    if not records:
        # FETCH-PARK-1: nothing to send (fetch.min.bytes = 1): park in purgatory.
        d.parked_fetches = (*d.parked_fetches, request)
        d.fired.append("FETCH-PARK-1")
        return
    respond(d, answer(request, records=records, hw=hw_at_read, log_start=start_at_read))
