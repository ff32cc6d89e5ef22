"""The fetch purgatory: fetches parked until data arrives, their deadline, or the end
of their leader's leadership (FETCH-PARK-2..4)."""

from __future__ import annotations

from .draft import Draft
from .messages import ParkedFetch
from .network import answer, respond


def read_end(fetch_offset: int, max_records: int | None) -> int | None:
    """FETCH-LEADER-3: a response carries at most ``max_records`` records."""
    return None if max_records is None else fetch_offset + max_records


def complete_parked_fetch(d: Draft, parked: ParkedFetch, rule: str) -> None:
    """FETCH-PARK-2/3: a parked fetch completes; it reads the log and the HW *now*
    (``DelayedFetch.onComplete`` re-reads) without updating the follower's progress again."""
    d.parked_fetches = tuple([p for p in d.parked_fetches if p != parked])
    leader = d.replicas[d.position[parked.leader]]
    records = leader.log.read(parked.fetch_offset, read_end(parked.fetch_offset, parked.max_records))
    d.fired.append(rule)
    respond(d, answer(parked, records=records, hw=leader.hw, log_start=leader.log_start))


def wake_parked_fetches(d: Draft, leader_id: str) -> None:
    """FETCH-PARK-2: after an append, parked fetches that now have data complete."""
    if not d.parked_fetches:
        return
    leader = d.replicas[d.position[leader_id]]
    for parked in list(d.parked_fetches):
        if parked.leader == leader_id and leader.leo > parked.fetch_offset:
            complete_parked_fetch(d, parked, "FETCH-PARK-2")


def abort_parked_fetches(d: Draft, leader_id: str, *, error: str | None) -> None:
    """FETCH-PARK-4: the leader stops leading. Its parked fetches complete with ``error``
    (DelayedFetch case A), or vanish if ``error`` is None (the broker crashed)."""
    if not d.parked_fetches:
        return
    mine = [p for p in d.parked_fetches if p.leader == leader_id]
    if not mine:
        return
    d.parked_fetches = tuple([p for p in d.parked_fetches if p.leader != leader_id])
    d.fired.append("FETCH-PARK-4")
    if error is None:
        return
    for parked in mine:
        respond(d, answer(parked, hw=-1, log_start=-1, error=error))  # FETCH-LEADER-1: errors carry -1
