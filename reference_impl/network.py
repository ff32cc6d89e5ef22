"""Who an answer reaches (MSG-DROP-1), and putting answers in flight.

A request is handled in the step that sends it; its answer travels until a later step
delivers it. It reaches only the fetcher session that asked: the same live incarnation
of the broker, still following the same leader in the same epoch.
"""

from __future__ import annotations

from typing import Any

from .draft import Draft
from .log import Record
from .messages import FetchResponse, ParkedFetch
from .state import FOLLOWER


def reachable(d: Draft, dst: str, incarnation: int, src: str, request_epoch: int) -> bool:
    """MSG-DROP-1: an answer reaches only the fetcher session that asked: the same live
    incarnation of the broker, still following ``src`` in ``request_epoch``. (A broker
    that restarts has new connections; one that changes leader or epoch replaces its
    fetcher, and the old one's answers go nowhere.)"""
    replica = d.replicas[d.position[dst]]
    return (
        replica.online
        and replica.incarnation == incarnation
        and replica.role is FOLLOWER
        and replica.leader == src
        and replica.leader_epoch == request_epoch
    )


def drop_unreachable_answers(d: Draft, replica_id: str) -> None:
    """MSG-DROP-1: after a broker's role, leader or epoch changed, answers in flight to
    its old fetcher session are discarded."""
    if not d.fetch_responses and not d.epoch_responses:
        return
    keep_fetch = tuple(
        r
        for r in d.fetch_responses
        if r.dst != replica_id or reachable(d, r.dst, r.incarnation, r.src, r.request_epoch)
    )
    keep_epoch = tuple(
        r
        for r in d.epoch_responses
        if r.dst != replica_id or reachable(d, r.dst, r.incarnation, r.src, r.request_epoch)
    )
    if len(keep_fetch) == len(d.fetch_responses) and len(keep_epoch) == len(d.epoch_responses):
        return
    d.fetch_responses = keep_fetch
    d.epoch_responses = keep_epoch
    d.fired.append("MSG-DROP-1")


def respond(d: Draft, response: FetchResponse) -> None:
    """Put a fetch response in flight, unless its fetcher session is gone (MSG-DROP-1)."""
    if not reachable(d, response.dst, response.incarnation, response.src, response.request_epoch):
        d.fired.append("MSG-DROP-1")
        return
    d.fetch_responses = (*d.fetch_responses, response)


def answer(
    request: ParkedFetch, *, hw: int, log_start: int, records: tuple[Record, ...] = (), **fields: Any
) -> FetchResponse:
    """A fetch response addressed back to the session that sent ``request``; every answer
    states the HW and log start it carries (-1 on an error), as Kafka's partition data does
    (LOG-START-1: a follower takes the log start, LOG-START-4)."""
    return FetchResponse(
        dst=request.follower,
        src=request.leader,
        request_epoch=request.request_epoch,
        fetch_offset=request.fetch_offset,
        records=records,
        hw=hw,
        log_start=log_start,
        incarnation=request.incarnation,
        **fields,
    )
