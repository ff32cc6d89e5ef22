"""The state of one partition: replicas, controller, messages in flight, the clock.

Every value is immutable: a step reads one ``State`` and builds one new ``State``
(``draft.py``), so a state can be kept, compared and replayed. The histories that only
grow (logs, producer outcomes, committed records) are persistent sequences (``log.py``,
``history.py``) so a step's cost does not depend on how long they are.

Variables are grouped as in the spec (``spec/replication.md`` section "State"):
per replica (``Replica``), the leader's view of each follower (``FollowerProgress``),
the controller (``Controller``), messages (``messages.py``), producer and consumer
outcomes, and history variables that exist only for the invariants.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from operator import attrgetter, itemgetter

from .config import Config
from .epoch_cache import EpochCache
from .history import History
from .log import Log, Record
from .messages import AlterPartition, Delivered, EpochResponse, FetchResponse, LeaderAndIsr, ParkedFetch, PendingProduce
from .values import cached_hash, evolve, fast_init


class Role(StrEnum):
    LEADER = "leader"
    FOLLOWER = "follower"
    NONE = "none"
    """Online but told of no live leader (the partition is offline)."""


class FetchState(StrEnum):
    """Where a follower's fetcher is for its current leader epoch."""

    TRUNCATING = "truncating"
    """leader-epoch: must send OffsetsForLeaderEpoch before fetching."""
    FETCHING = "fetching"


LEADER, FOLLOWER, NO_ROLE = Role.LEADER, Role.FOLLOWER, Role.NONE
FETCHING, TRUNCATING = FetchState.FETCHING, FetchState.TRUNCATING
"""The members as module constants, for the code that runs on every step: in Python 3.11
reading a member through its class (``Role.LEADER``) costs about ten global reads."""


@fast_init
@dataclass(frozen=True)
class FollowerProgress:
    """What a leader knows of one follower (Kafka ``Replica`` state on the leader).

    Lost when the leader crashes or stops being leader.
    """

    replica: str
    remote_leo: int | None
    """The fetch offset of the follower's last fetch; None (Kafka's -1) until one arrives."""
    last_caught_up_ms: int | None
    """Last time the follower was caught up to the leader's LEO; None for never."""
    last_fetch_leader_leo: int | None
    """The leader's LEO when the follower's previous fetch was handled."""
    last_fetch_ms: int | None
    """When the follower's previous fetch was handled."""
    broker_epoch: int | None = None
    """The follower's incarnation (``Replica.incarnation``, Kafka's broker epoch) its last
    fetch to this leader carried; None until a fetch since this replica became leader
    (KIP-903 ``ReplicaState.brokerEpoch``, emptied by a new leader's ``resetReplicaState``):
    HW-LEADER-4 compares it with the follower's current one."""


@cached_hash
@fast_init
@dataclass(frozen=True)
class Replica:
    """One broker's copy of the partition, and what that broker believes."""

    id: str
    online: bool
    log: Log
    hw: int
    checkpoint_hw: int
    """The HW in ``replication-offset-checkpoint``: what a restart reads back."""
    epoch_cache: EpochCache
    """Empty under hw-truncation. Always durable (Kafka flushes it on every change)."""
    role: Role
    leader: str | None
    """The leader this replica was last told of."""
    leader_epoch: int
    """The leader epoch this replica was last told of (-1: none, RESTART-1 under ZooKeeper)."""
    fetch_state: FetchState
    progress: tuple[FollowerProgress, ...]
    """Only on a leader: one entry per follower, in replica order."""
    started_ms: int
    """When the broker last started; its periodic tasks run from here."""
    incarnation: int
    """How many times the broker restarted: a request's answer reaches only the
    incarnation that sent it (a restarted broker has new connections)."""
    log_start: int = 0
    """The log start offset: records below it are gone (LOG-START-1). The log keeps
    offsets as positions: below this it reads ``log.GAP``, stored nowhere (``Log.starting_at``)."""
    unchecked_below: tuple[Record, ...] = ()
    """The records just below ``log_start`` that a raised log start (LOG-START-4) hid but
    that are still on disk: the raise lives in memory until the broker's log-start
    checkpoint task writes it (CKPT-3), so a crash before then brings them back with the
    old log start (LOG-START-5). Empty unless a follower raised its log start since its
    last checkpoint run; never observed."""
    isr: tuple[str, ...] = ()
    """On a leader that no longer leads the controller's epoch (its next LeaderAndIsr is in
    flight): the ISR it still knows, that of the last epoch it led (PRODUCE-2). A current
    leader's ISR is the controller's record; read either through ``alter_partition.leader_isr``."""

    @property
    def leo(self) -> int:
        return self.log.end

    def follower(self, replica_id: str) -> FollowerProgress:
        for entry in self.progress:  # at most two entries: a loop beats an index
            if entry.replica == replica_id:
                return entry
        raise KeyError(replica_id)


@cached_hash
@fast_init
@dataclass(frozen=True)
class Controller:
    """The controller's record of the partition (what ZooKeeper / the metadata log holds)."""

    leader: str | None
    epoch: int
    isr: tuple[str, ...]
    """In replica order. The leader changes it (AlterPartition), the controller on election."""
    partition_epoch: int = 0
    """Bumped by every change of this record (ZooKeeper: the znode version; KRaft: the
    partition epoch); an AlterPartition based on an older one is refused (ISR-ALTER-2)."""
    down: tuple[str, ...] = ()
    """Brokers whose failure the controller has handled (CTRL-FAIL-*), in replica order; an
    offline broker not listed here has failed without the controller knowing yet."""


@fast_init
@dataclass(frozen=True)
class ProduceOutcome:
    id: str
    acks: str
    status: str
    """``acked``, ``pending``, ``sent`` (acks=0) or a Kafka error name."""
    records: tuple[tuple[int, str, int], ...] = ()
    """``(offset, value, epoch)`` of what was appended, for the invariants."""


@fast_init
@dataclass(frozen=True)
class ConsumeOutcome:
    replica: str | None
    offset: int
    records: tuple[tuple[int, str, int], ...]
    hw: int | None
    error: str | None


@dataclass(frozen=True)
class EpochQueryOutcome:
    """The answer to the last ``epoch_query`` (OffsetsForLeaderEpoch from a client)."""

    replica: str
    requested_epoch: int
    error: str | None
    epoch: int
    end_offset: int


@cached_hash
@fast_init
@dataclass(frozen=True)
class State:
    config: Config
    clock_ms: int
    replicas: tuple[Replica, ...]
    controller: Controller
    fetch_responses: tuple[FetchResponse, ...]
    parked_fetches: tuple[ParkedFetch, ...]
    epoch_responses: tuple[EpochResponse, ...]
    leader_and_isr: tuple[LeaderAndIsr, ...]
    pending_produces: tuple[PendingProduce, ...]
    produces: History[ProduceOutcome]
    """Every produce's outcome in send order; ``produces.find(id)`` finds one by id."""
    consumed: ConsumeOutcome | None
    unclean_elections: int
    """History variable: how many unclean elections happened (AckedNotLost is void after one)."""
    power_failures: int
    """History variable: crashes that lost unflushed records (AckedNotLost is void after one)."""
    power_lost_from: int | None
    """History variable: the lowest offset from which a power failure lost records (None
    before any); ISR members may differ from there on (StrongIsr)."""
    committed: History[tuple[int, str, int]]
    """History variable: ``(offset, value, epoch)`` of records acknowledged to an acks=all
    producer or returned to a consumer. Would not exist in an implementation."""
    fired: tuple[str, ...]
    """The spec rules the last step fired, in order (for ``explain`` and rule coverage)."""
    alter_partitions: tuple[AlterPartition, ...] = ()
    """ISR changes proposed by a leader, not yet answered by the controller (ISR-ALTER-*)."""
    fenced_proposals: tuple[AlterPartition, ...] = ()
    """Proposals the controller answered ``FENCED_LEADER_EPOCH``: their leader stays pending
    on them (no other ISR change; an expansion still counts in its maximal ISR) until its
    new LeaderAndIsr arrives or it crashes (ISR-ALTER-5, ``Partition.handleAlterPartitionError``).
    No longer in flight, so not in the observation's ``in_flight``."""
    epoch_query: EpochQueryOutcome | None = None
    """The answer to the last ``epoch_query`` step (EPOCH-QUERY-*)."""
    delivered: tuple[Delivered, ...] = ()
    """The answers the last step delivered (or dropped on arrival): observable for one
    step (``observe``: ``answers``, OBS-ANSWER-1)."""

    def replica(self, replica_id: str) -> Replica:
        return self.replicas[self.config.position[replica_id]]

    def is_current_leader(self, replica: Replica) -> bool:
        """A live replica that believes it leads, in the epoch the controller has now."""
        ctrl = self.controller
        return (
            replica.online
            and replica.role is LEADER
            and replica.leader_epoch == ctrl.epoch
            and ctrl.leader == replica.id
        )


OUTPUTS: dict[str, object] = {"fired": (), "delivered": (), "consumed": None, "epoch_query": None}
"""The fields no step reads, each with its empty value: what the last step fired and
delivered, the last consumer read and the last ``epoch_query`` answer. A step writes each
whole (or clears it) and never reads it, ``enabled_steps`` does not look at them, and of
the invariants only ConsumerBelowHw reads one (the consumer read, on the state a
``consume`` made). So two states that differ only here have the same futures but for
these fields (spec/replication.md, "State"; ``tests/test_explore.py`` checks it on every
state and step of a search), and a search of the reference alone may hold them as one
(``explore``'s ``merge_outputs``). An observer reads them: a search that replays an
implementation keeps them."""


def without_outputs(state: State) -> State:
    """``state`` with every field of ``OUTPUTS`` empty."""
    d = state.__dict__
    if all(d[name] == empty for name, empty in OUTPUTS.items()):
        return state
    return evolve(state, **OUTPUTS)


MEMO = "_memo"
"""Where a state keeps results computed from it (``invariants.py``); not a field, never
copied to another state (``Draft``, ``evolve``)."""


produce_key: Callable[[ProduceOutcome], str] = attrgetter("id")
"""A producer outcome's key in ``State.produces``: its produce id."""


_offset = itemgetter(0)


def empty_produces() -> History[ProduceOutcome]:
    return History(produce_key)


def empty_committed() -> History[tuple[int, str, int]]:
    return History(_offset)  # found by offset (cheap to hash), compared whole


def state_at_start(config: Config, replicas: tuple[Replica, ...], controller: Controller) -> State:
    """A partition at time 0 with these replicas and controller record: nothing in flight,
    no produce or consume yet (the one place both ways of starting build it)."""
    return State(
        config=config,
        clock_ms=0,
        replicas=replicas,
        controller=controller,
        fetch_responses=(),
        parked_fetches=(),
        epoch_responses=(),
        leader_and_isr=(),
        pending_produces=(),
        produces=empty_produces(),
        consumed=None,
        unclean_elections=0,
        power_failures=0,
        power_lost_from=None,
        committed=empty_committed(),
        fired=(),
    )


__all__ = [
    "FETCHING",
    "FOLLOWER",
    "LEADER",
    "NO_ROLE",
    "OUTPUTS",
    "TRUNCATING",
    "ConsumeOutcome",
    "Controller",
    "EpochQueryOutcome",
    "FetchState",
    "FollowerProgress",
    "Log",
    "ProduceOutcome",
    "Record",
    "Replica",
    "Role",
    "State",
    "state_at_start",
    "without_outputs",
]
