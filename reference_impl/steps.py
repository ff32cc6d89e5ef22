"""The steps: every input to the model is one of these values.

A step is what happens next, chosen from outside: a producer sends, a follower
fetches, a response arrives, time passes, a broker crashes, the controller elects.
Every choice the real system makes by timing or chance is a field here, so the model
stays deterministic. Each step has a wire name (``kind``) used in fixtures and in the
adapter protocol; ``step_from_dict`` / ``step_to_dict`` convert plain data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, fields
from typing import Any, ClassVar

from .errors import StepFormatError
from .state import State


@dataclass(frozen=True)
class Produce:
    """A producer sends ``values`` to the leader (or to ``to``) with ``acks`` 0, 1 or all."""

    kind: ClassVar[str] = "produce"
    values: tuple[str, ...]
    acks: str = "all"
    id: str | None = None
    to: str | None = None


@dataclass(frozen=True)
class Fetch:
    """Follower ``replica`` sends a fetch; its leader handles it (responds or parks it).

    ``max_records`` caps how many records the response carries (standing for
    ``replica.fetch.max.bytes``); without it the leader sends everything to its LEO.
    ``max_wait_ms`` is the request's max wait (default ``replica.fetch.wait.max.ms``); 0
    asks for an answer at once even when there is nothing to read.
    """

    kind: ClassVar[str] = "fetch"
    replica: str
    max_records: int | None = None
    max_wait_ms: int | None = None


@dataclass(frozen=True)
class DeliverFetch:
    """The fetch response in flight to ``replica`` arrives and is processed."""

    kind: ClassVar[str] = "deliver_fetch"
    replica: str


@dataclass(frozen=True)
class FetchRound:
    """``fetch`` then, if the leader answered at once, ``deliver_fetch``."""

    kind: ClassVar[str] = "fetch_round"
    replica: str
    max_records: int | None = None
    max_wait_ms: int | None = None


@dataclass(frozen=True)
class EpochRequest:
    """Follower ``replica`` sends OffsetsForLeaderEpoch; its leader answers."""

    kind: ClassVar[str] = "epoch_request"
    replica: str


@dataclass(frozen=True)
class DeliverEpoch:
    """The OffsetsForLeaderEpoch response in flight to ``replica`` arrives."""

    kind: ClassVar[str] = "deliver_epoch"
    replica: str


@dataclass(frozen=True)
class EpochRound:
    """``epoch_request`` then ``deliver_epoch``."""

    kind: ClassVar[str] = "epoch_round"
    replica: str


@dataclass(frozen=True)
class EpochQuery:
    """A client asks broker ``replica`` for the end offset of leader ``epoch``
    (OffsetsForLeaderEpoch, as Kafka's tests call ``Partition.lastOffsetForLeaderEpoch``).

    ``current_leader_epoch``: the KIP-320 current epoch the request carries; without it the
    broker does not fence. The answer is the observation's ``epoch_query``.
    """

    kind: ClassVar[str] = "epoch_query"
    replica: str
    epoch: int
    current_leader_epoch: int | None = None


@dataclass(frozen=True)
class Tick:
    """``ms`` milliseconds pass; timers due in that interval fire in time order."""

    kind: ClassVar[str] = "tick"
    ms: int


@dataclass(frozen=True)
class IsrExpiration:
    """Broker ``replica`` runs its ISR expiry check now (``Partition.maybeShrinkIsr``, as
    Kafka's tests call it), besides the periodic ``isr-expiration`` task of ``tick``."""

    kind: ClassVar[str] = "isr_expiration"
    replica: str


@dataclass(frozen=True)
class DeliverAlterPartition:
    """The ISR proposal of leader ``replica`` reaches the controller; its answer comes back."""

    kind: ClassVar[str] = "deliver_alter_partition"
    replica: str


@dataclass(frozen=True)
class HeartbeatLapse:
    """Broker ``replica``, a follower, misses its heartbeats to the KRaft controller long
    enough to be fenced while it runs, then heartbeats again and is unfenced: it leaves
    the ISR at the same leader epoch and may rejoin it (CTRL-FENCE-1)."""

    kind: ClassVar[str] = "heartbeat_lapse"
    replica: str


@dataclass(frozen=True)
class Crash:
    """Broker ``replica`` dies: memory and its messages are lost, log and checkpoints stay.

    ``unflushed_from``: a power failure, not a process crash. Records at or above this
    offset had not reached the disk and are gone (Kafka leaves fsync to the OS; KIP-101's
    divergence scenario). Without it nothing of the log is lost.
    """

    kind: ClassVar[str] = "crash"
    replica: str
    unflushed_from: int | None = None


@dataclass(frozen=True)
class Restart:
    """Broker ``replica`` starts again and learns the current leader from the controller."""

    kind: ClassVar[str] = "restart"
    replica: str


@dataclass(frozen=True)
class Elect:
    """The controller elects a leader.

    Without ``leader``: the controller handles the brokers that failed since it last
    looked (a dead leader is replaced by the first live ISR member, or unclean the first
    live replica, or none; dead followers leave the ISR), or retries the election of an
    offline partition. With ``leader``: a controlled election (preferred leader /
    reassignment) of that live ISR member.
    ``notify`` lists the brokers that get the LeaderAndIsr at once (default: every live
    one); the rest stay in flight until ``deliver_leader_and_isr``.
    """

    kind: ClassVar[str] = "elect"
    leader: str | None = None
    notify: tuple[str, ...] | None = None


@dataclass(frozen=True)
class DeliverLeaderAndIsr:
    """The oldest LeaderAndIsr in flight to ``replica`` arrives."""

    kind: ClassVar[str] = "deliver_leader_and_isr"
    replica: str


@dataclass(frozen=True)
class Consume:
    """A consumer fetches from ``offset`` at the leader: it gets records below the HW."""

    kind: ClassVar[str] = "consume"
    offset: int = 0


Step = (
    Produce
    | Fetch
    | DeliverFetch
    | FetchRound
    | EpochRequest
    | DeliverEpoch
    | EpochRound
    | EpochQuery
    | Tick
    | IsrExpiration
    | DeliverAlterPartition
    | HeartbeatLapse
    | Crash
    | Restart
    | Elect
    | DeliverLeaderAndIsr
    | Consume
)


def _check_str(kind: str, name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise StepFormatError(name, f"{kind}: must be a non-empty string, got {value!r}")
    return value


def _int_at_least(low: int, says: str) -> Callable[[str, str, Any], int]:
    def parse(kind: str, name: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise StepFormatError(name, f"{kind}: must be {says}, got {value!r}")
        return value

    return parse


def _parse_values(kind: str, name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple) or not value:
        raise StepFormatError(name, f"{kind}: must be a non-empty list of strings")
    for item in value:
        _check_str(kind, name, item)
        if "@" in item:
            raise StepFormatError(name, f"{kind}: a value may not contain '@' (got {item!r})")
    return tuple(value)


ACKS = ("0", "1", "all")


def _parse_acks(kind: str, name: str, value: Any) -> str:
    text = "" if isinstance(value, bool) else str(value)  # true/false are no acks level
    if text == "-1":
        text = "all"
    if text not in ACKS:
        raise StepFormatError(name, f"{kind}: must be 0, 1 or all, got {value!r}")
    return text


def _parse_replicas(kind: str, name: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        raise StepFormatError(name, f"{kind}: must be a list of replica ids")
    return tuple(_check_str(kind, name, item) for item in value)


_REPLICA_ID = {"$ref": "#/$defs/replica_id"}
_NON_NEGATIVE = {"type": "integer", "minimum": 0}


@dataclass(frozen=True)
class StepField:
    """What a step field's name means, in every kind that has it: how plain data is read
    into it (``step_from_dict``: a ``StepFormatError`` naming the field), its JSON Schema
    (the ``action`` definition of spec/definitions.schema.json is derived from these and
    the table, ``derived_action_schema``), and the values ``enabled_steps`` tries for it
    (``samples`` of the state; without, the field's default). ``replicas``: the samples are
    replica ids (``None`` among them for "none"), so a candidate step belongs to the
    replica it names (``enabled_steps`` lists the steps of no replica first, then each
    replica's)."""

    schema: Mapping[str, Any]
    parse: Callable[[str, str, Any], Any] = _check_str
    samples: Callable[[State], tuple[Any, ...]] | None = None
    replicas: bool = False


FIELDS: dict[str, StepField] = {
    "values": StepField(
        {"oneOf": [{"$ref": "#/$defs/value"}, {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/value"}}]},
        _parse_values,
        lambda s: ((f"v{len(s.produces) + 1}",),),
    ),
    "acks": StepField({"enum": [0, 1, "0", "1", "all", -1, "-1"]}, _parse_acks, lambda s: ("all", "1")),
    "id": StepField({"type": "string", "minLength": 1}),
    "to": StepField(_REPLICA_ID),
    "replica": StepField(_REPLICA_ID, samples=lambda s: s.config.replicas, replicas=True),
    "max_records": StepField({"type": "integer", "minimum": 1}, _int_at_least(1, "a positive integer")),
    "max_wait_ms": StepField(_NON_NEGATIVE, _int_at_least(0, "a non-negative integer")),
    "epoch": StepField(
        {
            "type": "integer",
            "minimum": -1,
            "description": "-1: Kafka's undefined epoch (UNDEFINED_EPOCH), answered (-1, -1) (EPOCH-QUERY-3)",
        },
        _int_at_least(-1, "an integer >= -1 (-1: undefined)"),
        lambda s: (s.controller.epoch,),
    ),
    "current_leader_epoch": StepField(
        {
            "type": "integer",
            "minimum": -1,
            "description": "-1 or absent: no current epoch, no fencing (RequestUtils.getLeaderEpoch, EPOCH-QUERY-3)",
        },
        _int_at_least(-1, "an integer >= -1 (-1: undefined)"),
    ),
    "ms": StepField(
        _NON_NEGATIVE,
        _int_at_least(0, "a non-negative integer"),
        lambda s: (s.config.replica_fetch_wait_max_ms, s.config.replica_lag_time_max_ms // 2),
    ),
    "unflushed_from": StepField(_NON_NEGATIVE, _int_at_least(0, "a non-negative integer")),
    "leader": StepField(_REPLICA_ID, samples=lambda s: (None, *s.config.replicas), replicas=True),
    "notify": StepField({"type": "array", "items": _REPLICA_ID}, _parse_replicas),
    "offset": StepField(_NON_NEGATIVE, _int_at_least(0, "a non-negative integer")),
}
"""Every step field by name (a name means the same in every kind that has it)."""


@dataclass(frozen=True)
class StepKind:
    """One row of the step table: what the project states about a step kind, once.

    The wire name is the class's ``kind``; its fields are the class's, each read and
    described by ``FIELDS``. ``action`` is the reference function that performs the step
    and ``refused`` the one that says whether its precondition holds (``module.function``
    under ``reference_impl``; ``apply`` dispatches on these, ``enabled_steps`` asks
    ``refused``; each takes the step's fields in order, or the step itself when its
    parameter is named ``step``). ``rules`` are the rule families (spec/replication.md
    ids without their number) the step can fire, so a reader goes from a fixture's step to
    this row to the rule's line (``grep -n ID reference_impl/``). ``flight``: a delivery
    step takes the oldest message of this ``State`` field; ``round_of``: a round is this
    request and this delivery in one step. ``changes_logs``: the step can change a
    follower's log. The schema's step definition and the enabled steps are derived from
    this table; the spec's Steps table, the harness's kind sets and the fuzz and corpus
    distributions are checked against it (tests/test_step_kinds.py,
    tests/test_definitions.py).
    """

    cls: type
    action: str
    rules: tuple[str, ...]
    refused: str | None = None
    flight: str | None = None
    round_of: tuple[str, str] | None = None
    changes_logs: bool = False

    @property
    def kind(self) -> str:
        kind: str = self.cls.kind  # type: ignore[attr-defined]
        return kind


STEP_KINDS: tuple[StepKind, ...] = (
    StepKind(
        Produce,
        "producer.produce",
        ("PRODUCE", "PRODUCE-PRE", "HW-LEADER", "FETCH-PARK", "MSG-DROP", "CKPT"),
        "producer.produce_refused",
    ),
    StepKind(
        Tick,
        "clock.tick",
        ("TICK", "ISR-SHRINK", "ISR-ALTER", "ISR-WRITE", "FETCH-PARK", "HW-LEADER", "MSG-DROP", "PRODUCE", "CKPT"),
    ),
    StepKind(Consume, "consumer.consume", ("CONSUME",)),
    StepKind(
        Fetch,
        "follower.send_fetch",
        (
            "FETCH-PRE",
            "FETCH-LEADER",
            "FETCH-PARK",
            "HW-LEADER",
            "ISR-EXPAND",
            "ISR-CAUGHT-UP",
            "ISR-ALTER",
            "ISR-WRITE",
            "PRODUCE",
            "CKPT",
        ),
        "follower.fetch_refused",
    ),
    StepKind(
        DeliverFetch,
        "follower.deliver_fetch",
        (
            "FETCH-DELIVER-PRE",
            "FOLLOWER-FETCH",
            "FOLLOWER-DIVERGE",
            "FOLLOWER-OOR",
            "HW-FOLLOWER",
            "TRUNC",
            "TRUNC-EPOCH",
            "EPOCH-CACHE",
            "LOG-START",
            "CRASH",
            "CKPT",
        ),
        "follower.deliver_fetch_refused",
        flight="fetch_responses",
        changes_logs=True,
    ),
    StepKind(
        FetchRound,
        "rounds.fetch_round",
        ("FETCH-ROUND",),
        round_of=("fetch", "deliver_fetch"),
        changes_logs=True,
    ),
    StepKind(
        EpochRequest,
        "follower.send_epoch_request",
        ("EPOCH-PRE", "EPOCH-LEADER", "EPOCH-CACHE"),
        "follower.epoch_request_refused",
    ),
    StepKind(
        DeliverEpoch,
        "follower.deliver_epoch",
        ("EPOCH-DELIVER-PRE", "EPOCH-FOLLOWER", "TRUNC", "TRUNC-EPOCH", "EPOCH-CACHE", "CKPT"),
        "follower.deliver_epoch_refused",
        flight="epoch_responses",
        changes_logs=True,
    ),
    StepKind(
        EpochRound,
        "rounds.epoch_round",
        ("EPOCH-ROUND",),
        round_of=("epoch_request", "deliver_epoch"),
        changes_logs=True,
    ),
    StepKind(
        Crash,
        "broker.crash",
        ("CRASH", "CRASH-PRE", "TRUNC", "EPOCH-CACHE", "FETCH-PARK", "PRODUCE"),
        "broker.crash_refused",
        changes_logs=True,
    ),
    StepKind(
        Restart,
        "broker.restart",
        (
            "RESTART",
            "RESTART-PRE",
            "LOG-START",
            "CTRL-ELECT",
            "CTRL-FAIL",
            "LAI",
            "TRUNC",
            "TRUNC-HW",
            "EPOCH-CACHE",
            "HW-LEADER",
            "ISR-ALTER",
        ),
        "broker.restart_refused",
        changes_logs=True,
    ),
    StepKind(
        DeliverLeaderAndIsr,
        "controller.deliver_leader_and_isr",
        ("LAI", "LAI-PRE", "TRUNC", "TRUNC-HW", "EPOCH-CACHE", "FETCH-PARK", "HW-LEADER", "PRODUCE"),
        "controller.deliver_leader_and_isr_refused",
        flight="leader_and_isr",
        changes_logs=True,
    ),
    StepKind(
        Elect,
        "controller.elect",
        (
            "CTRL-ELECT",
            "CTRL-ELECT-PRE",
            "CTRL-FAIL",
            "LAI",
            "TRUNC",
            "TRUNC-HW",
            "EPOCH-CACHE",
            "FETCH-PARK",
            "HW-LEADER",
            "MSG-DROP",
            "PRODUCE",
            "CKPT",
            "ISR-ALTER",
        ),
        "controller.elect_refused",
        changes_logs=True,
    ),
    StepKind(
        EpochQuery,
        "epoch_leader.answer_epoch_query",
        ("EPOCH-QUERY", "EPOCH-QUERY-PRE", "EPOCH-CACHE"),
        "epoch_leader.epoch_query_refused",
    ),
    StepKind(
        IsrExpiration,
        "isr.run_isr_expiration",
        ("ISR-SHRINK", "ISR-SHRINK-PRE", "ISR-ALTER", "ISR-WRITE", "HW-LEADER"),
        "isr.isr_expiration_refused",
    ),
    StepKind(
        DeliverAlterPartition,
        "controller.deliver_alter_partition",
        ("ISR-ALTER", "ISR-ALTER-PRE", "HW-LEADER", "PRODUCE"),
        "controller.deliver_alter_partition_refused",
        flight="alter_partitions",
    ),
    StepKind(
        HeartbeatLapse,
        "controller.heartbeat_lapse",
        ("CTRL-FENCE", "CTRL-FENCE-PRE", "CTRL-FAIL", "HW-LEADER", "PRODUCE", "ISR-ALTER"),
        "controller.heartbeat_lapse_refused",
    ),
)
"""The step table: one row per step kind, in the order of the spec's Steps table (and of
``enabled_steps``: a row's steps of no replica, then each replica's steps in row order)."""

STEP_TYPES: dict[str, type] = {row.kind: row.cls for row in STEP_KINDS}
"""Wire name -> step class."""

KIND: dict[str, StepKind] = {row.kind: row for row in STEP_KINDS}
"""Wire name -> its row of the step table."""

DELIVERIES: dict[str, str] = {row.kind: row.flight for row in STEP_KINDS if row.flight is not None}
"""Delivery kind -> the ``State`` field of the messages in flight it takes (oldest first)."""

ROUNDS: dict[str, tuple[str, str]] = {row.kind: row.round_of for row in STEP_KINDS if row.round_of is not None}
"""Round kind -> (its request kind, its delivery kind)."""

SPLIT_KINDS: tuple[str, ...] = tuple(
    row.kind for row in STEP_KINDS if row.flight is not None or any(row.kind in parts for parts in ROUNDS.values())
)
"""The kinds a round or an implicit delivery stands for: an implementation may lack them and
still be judged (it takes the rounds, or delivers at once)."""

LOG_CHANGING_DELIVERIES: frozenset[str] = frozenset(k for k in DELIVERIES if KIND[k].changes_logs)
"""The deliveries that can change a follower's log."""


_FIELDS: dict[type, tuple[tuple[Field[Any], ...], frozenset[str]]] = {
    cls: (fields(cls), frozenset({"kind", *(f.name for f in fields(cls))})) for cls in STEP_TYPES.values()
}
"""Each step type's fields, and the keys a step's data may have (``kind`` and the fields)."""


def derived_action_schema() -> dict[str, Any]:
    """The JSON Schema of one step (spec/definitions.schema.json ``$defs.action``), from the
    table and ``FIELDS``: ``python -m conformance.fixtures.schemas --write`` writes it,
    tests/test_definitions.py checks the file against it."""
    branches = []
    for row in STEP_KINDS:
        step_fields = fields(row.cls)
        branches.append(
            {
                "if": {"properties": {"kind": {"const": row.kind}}, "required": ["kind"]},
                "then": {
                    "properties": {"kind": {}, **{f.name: dict(FIELDS[f.name].schema) for f in step_fields}},
                    "required": [f.name for f in step_fields if f.default is MISSING],
                    "additionalProperties": False,
                },
            }
        )
    return {
        "type": "object",
        "description": "One step: what happens next. `kind` names the action; other fields are its parameters.",
        "required": ["kind"],
        "properties": {"kind": {"enum": list(STEP_TYPES)}},
        "allOf": branches,
    }


def step_from_dict(data: Mapping[str, Any]) -> Step:
    """Build a step from plain data: ``{"kind": "fetch", "replica": "B"}``.

    Raises ``StepFormatError`` naming the field that is wrong.
    """
    if not isinstance(data, Mapping):
        raise StepFormatError("do", f"a step must be a mapping, got {type(data).__name__}")
    kind = data.get("kind")
    if kind not in STEP_TYPES:
        raise StepFormatError("kind", f"unknown step kind {kind!r} (one of: {', '.join(STEP_TYPES)})")
    cls = STEP_TYPES[kind]
    step_fields, allowed = _FIELDS[cls]
    if not data.keys() <= allowed:
        extra = sorted(set(data) - allowed)
        raise StepFormatError(extra[0], f"{kind}: unknown field (allowed: {', '.join(sorted(allowed - {'kind'}))})")
    kwargs: dict[str, Any] = {}
    for f in step_fields:
        if f.name not in data:
            continue
        value = data[f.name]
        if value is None and f.default is None:
            continue  # null stands for "not given" on an optional field (as kconform sends defaults)
        kwargs[f.name] = FIELDS[f.name].parse(kind, f.name, value)
    missing = [f.name for f in step_fields if f.name not in kwargs and f.default is MISSING]
    if missing:
        raise StepFormatError(missing[0], f"{kind}: required field is missing")
    return cls(**kwargs)  # type: ignore[no-any-return]


def step_to_dict(step: Step) -> dict[str, Any]:
    """The plain-data form of a step, omitting fields left at their defaults."""
    out: dict[str, Any] = {"kind": step.kind}
    known = _FIELDS.get(type(step))
    for f in known[0] if known is not None else fields(step):
        value = getattr(step, f.name)
        if value == f.default:
            continue
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out
