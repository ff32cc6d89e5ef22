"""Messages that live in the state between steps: in flight, parked, or waiting.

A request is handled by the leader in the same step that sends it (the network hop is
not interesting here); what the leader produces (a response, a parked fetch, a waiting
produce) is a value in the state until a later step delivers, completes or drops it.
That is what makes "crash between fetch and response" a plain step order.
"""

from __future__ import annotations

from dataclasses import dataclass

from .log import Record
from .values import fast_init


@fast_init
@dataclass(frozen=True)
class FetchResponse:
    """A fetch response on its way from ``src`` (the leader) to ``dst`` (the follower)."""

    dst: str
    src: str
    request_epoch: int
    """The follower's leader epoch when it sent the request (stale responses are dropped)."""
    fetch_offset: int
    records: tuple[Record, ...]
    hw: int
    """The leader's HW sampled when the records were read (see FETCH-LEADER-3)."""
    error: str | None = None
    diverging_epoch: tuple[int, int] | None = None
    leader_leo: int | None = None
    """Carried with OFFSET_OUT_OF_RANGE: the leader's LEO when it answered (observed only; the
    follower reads the leader's LEO again when it processes the error, FOLLOWER-OOR-4)."""
    log_start: int = 0
    """The leader's log start offset sampled with the HW (-1 on an error, as in Kafka)."""
    leader_log_start: int | None = None
    """Carried with OFFSET_OUT_OF_RANGE: the leader's log start when it answered (the follower
    reads it again when it processes the error)."""
    incarnation: int = 0
    """The incarnation of the follower that sent the request."""


@fast_init
@dataclass(frozen=True)
class ParkedFetch:
    """A follower's fetch as the leader holds it: parked in the fetch purgatory
    (DelayedFetch) when there is nothing to read; every answer is addressed from it."""

    follower: str
    leader: str
    request_epoch: int
    fetch_offset: int
    deadline_ms: int
    """Arrival time + ``replica.fetch.wait.max.ms``."""
    incarnation: int = 0
    max_records: int | None = None


@fast_init
@dataclass(frozen=True)
class EpochResponse:
    """An OffsetsForLeaderEpoch response on its way to ``dst``."""

    dst: str
    src: str
    request_epoch: int
    requested_epoch: int | None
    error: str | None
    epoch: int
    end_offset: int
    incarnation: int = 0


@fast_init
@dataclass(frozen=True)
class LeaderAndIsr:
    """The controller's decision on its way to one broker."""

    dst: str
    leader: str | None
    """None: the partition has no leader (CTRL-ELECT-3)."""
    epoch: int
    isr: tuple[str, ...]


@fast_init
@dataclass(frozen=True)
class AlterPartition:
    """A leader's ISR proposal on its way to the controller (KIP-497 AlterIsr, called
    AlterPartition from 3.2). Carries the epochs the leader based it on."""

    leader: str
    leader_epoch: int
    partition_epoch: int
    isr: tuple[str, ...]
    """The proposed ISR, in replica order."""
    abandoned: bool = False
    """The leader no longer waits on it (ISR-ALTER-6): it applied a newer partition record
    at its own leader epoch, which reset its pending ISR change to the committed one. The
    request is still in flight and blocks the leader's next proposal until answered; the
    leader ignores the answer."""


@dataclass(frozen=True)
class PendingProduce:
    """An acks=all produce parked in the leader's produce purgatory (DelayedProduce)."""

    id: str
    leader: str
    required_offset: int
    """The leader's LEO right after the append: HW must reach it."""
    deadline_ms: int


@dataclass(frozen=True)
class Delivered:
    """An answer a step took out of flight: processed by its receiver, or ``dropped``
    on arrival because the session that asked is gone (MSG-DROP-1)."""

    message: FetchResponse | EpochResponse
    dropped: bool = False
