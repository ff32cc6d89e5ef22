"""A partition state given as plain data: a fixture's ``initial:`` block, a ``reset``'s.

Kafka's own unit tests mostly start from a state they build (logs seeded at chosen
epochs, a leader epoch cache, a high watermark, a leader and ISR), not from an empty
topic. ``given_state`` parses such a description, fills in what it leaves out, checks
that the state is one a partition can be in (INIT-1..INIT-5 in spec/replication.md) and
builds it. Every problem is an ``InitialStateError`` naming the field under ``initial``
(``replicas.B.hw``), so a fixture loader can point at the line.

``normalise`` returns the same description with every default spelled out: what
kconform sends to an implementation in ``reset`` (spec/adapter-protocol.md), so no
implementation has to re-derive a default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import epoch_cache
from .config import Config
from .epoch_cache import EpochCache
from .errors import KconformModelError
from .log import Log, Record
from .state import Controller, FetchState, FollowerProgress, Replica, Role, State, state_at_start

REPLICA_KEYS = (
    "online",
    "log_start",
    "log",
    "leo",
    "hw",
    "checkpoint_hw",
    "epoch_cache",
    "leader",
    "leader_epoch",
    "fetch_state",
    "remote_leo",
    "last_caught_up_ms",
)
PARTITION_KEYS = ("leader", "leader_epoch", "partition_epoch", "isr", "replicas")


def log_starting_at(offset: int, records: tuple[Record, ...] = ()) -> Log:
    """A log whose start offset is ``offset``, holding ``records`` from there on: offsets
    stay positions, and those below the start read as ``GAP`` (LOG-START-1) without being
    stored (``Log.starting_at``), so a start at 10^9 costs nothing."""
    return Log.starting_at(offset, records)


class InitialStateError(KconformModelError):
    """A given initial state is malformed or impossible; ``field`` is its path under
    ``initial`` (``replicas.B.hw``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"initial.{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class _GivenReplica:
    id: str
    online: bool
    log_start: int
    records: tuple[Record, ...]
    hw: int
    checkpoint_hw: int
    epoch_cache: EpochCache
    leader: str | None
    leader_epoch: int
    fetch_state: FetchState
    remote_leo: dict[str, int | None]
    last_caught_up_ms: dict[str, int | None]

    @property
    def leo(self) -> int:
        return self.log_start + len(self.records)

    @property
    def role(self) -> Role:
        if not self.online or self.leader is None:
            return Role.NONE
        return Role.LEADER if self.leader == self.id else Role.FOLLOWER


def _int(value: Any, field: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InitialStateError(field, f"must be an integer >= {minimum}, got {value!r}")
    return value


def _replica_id(value: Any, field: str, config: Config, nullable: bool = False) -> str | None:
    if value is None and nullable:
        return None
    if value not in config.position:
        raise InitialStateError(field, f"unknown replica {value!r} (config.replicas: {list(config.replicas)})")
    return str(value)


def _mapping(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InitialStateError(field, f"must be a mapping, got {type(value).__name__}")
    return value


def _unknown(data: Mapping[str, Any], allowed: tuple[str, ...], prefix: str) -> None:
    extra = sorted(set(data) - set(allowed))
    if extra:
        raise InitialStateError(prefix + extra[0], f"unknown field (allowed: {', '.join(allowed)})")


def _record(text: Any, field: str) -> Record:
    if not isinstance(text, str) or text.count("@") != 1:
        raise InitialStateError(field, f"a record is 'value@epoch', got {text!r}")
    value, _, epoch = text.partition("@")
    if not value or not epoch.isdigit():
        raise InitialStateError(
            field, f"a record is 'value@epoch' with a non-empty value and an epoch >= 0, got {text!r}"
        )
    return Record(value, int(epoch))


def cache_of_log(records: tuple[Record, ...], log_start: int) -> EpochCache:
    """INIT-3: the epoch cache a log's records imply: each epoch with its first offset."""
    cache: list[tuple[int, int]] = []
    for offset, record in enumerate(records, start=log_start):
        if not cache or cache[-1][0] != record.epoch:
            cache.append((record.epoch, offset))
    return tuple(cache)


def _replica(config: Config, name: str, data: Mapping[str, Any], partition: Controller) -> _GivenReplica:
    where = f"replicas.{name}."
    _unknown(data, REPLICA_KEYS, where)
    online = data.get("online", True)
    if not isinstance(online, bool):
        raise InitialStateError(where + "online", f"must be true or false, got {online!r}")
    log_start = _int(data.get("log_start", 0), where + "log_start")
    raw_log = data.get("log", [])
    if not isinstance(raw_log, list):
        raise InitialStateError(where + "log", "must be a list of 'value@epoch' records")
    records = tuple(_record(text, f"{where}log[{i}]") for i, text in enumerate(raw_log))
    for i in range(1, len(records)):
        if records[i].epoch < records[i - 1].epoch:
            raise InitialStateError(
                f"{where}log[{i}]",
                f"record epochs never decrease along a log (INIT-2): {records[i - 1].render()} is followed by "
                f"{records[i].render()}",
            )
    leo = log_start + len(records)
    if "leo" in data and _int(data["leo"], where + "leo") != leo:
        raise InitialStateError(
            where + "leo", f"is {data['leo']}, but log_start {log_start} + {len(records)} records gives {leo}"
        )
    hw = _int(data.get("hw", log_start), where + "hw")
    if not log_start <= hw <= leo:
        raise InitialStateError(where + "hw", f"{hw} is outside [log_start {log_start}, LEO {leo}] (INIT-2)")
    checkpoint_hw = _int(data.get("checkpoint_hw", hw), where + "checkpoint_hw")
    if checkpoint_hw > leo:
        raise InitialStateError(where + "checkpoint_hw", f"{checkpoint_hw} is above the LEO {leo} (INIT-2)")
    leader = _replica_id(data.get("leader", partition.leader), where + "leader", config, nullable=True)
    # INIT-4: a ZooKeeper broker of a leaderless partition was given it by a LeaderAndIsr
    # naming no leader, which leaves its Partition at no epoch (LAI-4, RESTART-1); an offline
    # one by default too (started into it, then down again), and none knows the leaderless
    # record's own epoch, which no ZooKeeper broker ever takes
    leaderless_zk = partition.leader is None and not config.profile.applies_leaderless_leader_and_isr
    knows = epoch_cache.UNDEFINED_EPOCH if leaderless_zk else partition.epoch
    leader_epoch = _int(data.get("leader_epoch", knows), where + "leader_epoch", epoch_cache.UNDEFINED_EPOCH)
    if leaderless_zk and not online and leader_epoch == partition.epoch != epoch_cache.UNDEFINED_EPOCH:
        raise InitialStateError(
            where + "leader_epoch",
            f"{leader_epoch} is the epoch of the controller's record with no leader, which a ZooKeeper "
            "broker never takes (LAI-4): give -1 or an older epoch (INIT-4)",
        )
    bound = partition.epoch if leader_epoch == epoch_cache.UNDEFINED_EPOCH else leader_epoch
    if leader_epoch > partition.epoch:
        raise InitialStateError(
            where + "leader_epoch", f"{leader_epoch} is above the partition's leader epoch {partition.epoch} (INIT-4)"
        )
    if records and records[-1].epoch > bound:
        raise InitialStateError(
            where + "log",
            f"holds a record of epoch {records[-1].epoch}, above the epoch {bound} the replica knows (INIT-2)",
        )
    if online and (leader, leader_epoch) != (partition.leader, knows):
        raise InitialStateError(
            where + "leader_epoch" if leader == partition.leader else where + "leader",
            f"an online replica knows the partition's leader and epoch ({partition.leader}, {knows}); "
            f"it has ({leader}, {leader_epoch}) and no LeaderAndIsr is in flight at the start (INIT-4)",
        )
    fetch_state = _fetch_state(config, data.get("fetch_state", "fetching"), where + "fetch_state")
    replica = _GivenReplica(
        id=name,
        online=online,
        log_start=log_start,
        records=records,
        hw=hw,
        checkpoint_hw=checkpoint_hw,
        epoch_cache=(),
        leader=leader,
        leader_epoch=leader_epoch,
        fetch_state=fetch_state,
        remote_leo={},
        last_caught_up_ms={},
    )
    if fetch_state is FetchState.TRUNCATING and replica.role is not Role.FOLLOWER:
        raise InitialStateError(where + "fetch_state", "only a follower can be truncating")
    cache = _cache(config, replica, data.get("epoch_cache"), where + "epoch_cache")
    remote, caught_up = _progress(config, replica, data, partition, where)
    return dataclasses.replace(replica, epoch_cache=cache, remote_leo=remote, last_caught_up_ms=caught_up)


def _fetch_state(config: Config, value: Any, field: str) -> FetchState:
    try:
        state = FetchState(value)
    except ValueError:
        raise InitialStateError(field, f"must be truncating or fetching, got {value!r}") from None
    if state is FetchState.TRUNCATING and not config.profile.asks_epoch_before_fetch:
        raise InitialStateError(
            field,
            f"only a leader-epoch follower truncates before fetching; this partition runs {config.generation.value}",
        )
    return state


def _cache(config: Config, replica: _GivenReplica, given: Any, field: str) -> EpochCache:
    """INIT-3: the epoch cache is the log's epochs with their first offsets, plus at most
    one later epoch that starts at the LEO (an epoch led with no record yet, LAI-2)."""
    derived = cache_of_log(replica.records, replica.log_start)
    if not config.profile.keeps_epoch_cache:
        if given:
            raise InitialStateError(field, f"{config.generation.value} keeps no leader-epoch cache; leave it out")
        return ()
    if given is None:
        if replica.role is Role.LEADER:
            return epoch_cache.assign(derived, replica.leader_epoch, replica.leo)  # LAI-2
        return derived
    if not isinstance(given, list) or not all(
        isinstance(e, list) and len(e) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in e)
        for e in given
    ):
        raise InitialStateError(field, "must be a list of [epoch, start offset] pairs")
    cache = tuple((int(e), int(o)) for e, o in given)
    expected = f"the log's epochs give {[list(e) for e in derived]}"
    if cache[: len(derived)] != derived or len(cache) > len(derived) + 1:
        raise InitialStateError(field, f"{[list(e) for e in cache]} does not match the log (INIT-3): {expected}")
    if len(cache) == len(derived) + 1:
        epoch, start = cache[-1]
        if start != replica.leo or (derived and epoch <= derived[-1][0]) or epoch > replica.leader_epoch:
            raise InitialStateError(
                field,
                f"its last entry {[epoch, start]} has no record: it must start at the LEO {replica.leo} with an epoch "
                f"above the log's and at most the known epoch {replica.leader_epoch} (INIT-3); {expected}",
            )
    return cache


def _progress(
    config: Config, replica: _GivenReplica, data: Mapping[str, Any], partition: Controller, where: str
) -> tuple[dict[str, int | None], dict[str, int | None]]:
    """INIT-5: the leader's view of each follower. Defaults are a new leader's: remote LEO
    unknown, ISR members caught up now (time 0), others never."""
    others = [name for name in config.replicas if name != replica.id]
    remote: dict[str, int | None] = dict.fromkeys(others)
    caught_up: dict[str, int | None] = {name: 0 if name in partition.isr else None for name in others}
    for key, table in (("remote_leo", remote), ("last_caught_up_ms", caught_up)):
        if key not in data:
            continue
        if replica.role is not Role.LEADER:
            raise InitialStateError(where + key, "only a replica that leads keeps a view of its followers")
        given = _mapping(data[key], where + key)
        for name, value in given.items():
            if name not in table:
                raise InitialStateError(f"{where}{key}.{name}", f"not a follower of {replica.id} (followers: {others})")
            if value is not None:
                value = _int(value, f"{where}{key}.{name}")
                if key == "remote_leo" and value > replica.leo:
                    raise InitialStateError(
                        f"{where}{key}.{name}", f"{value} is above the leader's LEO {replica.leo} (INIT-5)"
                    )
            table[name] = value
    if replica.role is not Role.LEADER:
        return {}, {}
    return remote, caught_up


def _partition(config: Config, data: Mapping[str, Any]) -> Controller:
    leader = _replica_id(data.get("leader", config.leader_at_start), "leader", config, nullable=True)
    epoch = _int(data.get("leader_epoch", 0), "leader_epoch")
    raw_isr = data.get("isr", list(config.replicas))
    if not isinstance(raw_isr, list) or not raw_isr:
        raise InitialStateError("isr", "must be a non-empty list of replica ids")
    for i, name in enumerate(raw_isr):
        _replica_id(name, f"isr[{i}]", config)
    if len(set(raw_isr)) != len(raw_isr):
        raise InitialStateError("isr", f"lists a replica twice: [{', '.join(raw_isr)}]")
    if leader is not None and leader not in raw_isr:
        raise InitialStateError("isr", f"the leader {leader} is not in the ISR [{', '.join(raw_isr)}] (INIT-1)")
    isr = tuple(name for name in config.replicas if name in raw_isr)
    partition_epoch = _int(data.get("partition_epoch", 0), "partition_epoch")
    # An offline replica's failure is not yet handled by the controller (its next step
    # does, CTRL-FAIL-*): the start has nothing in flight and no pending controller work.
    return Controller(leader=leader, epoch=epoch, isr=isr, partition_epoch=partition_epoch)


def parse(config: Config, data: Mapping[str, Any]) -> tuple[Controller, tuple[_GivenReplica, ...]]:
    """The partition and every replica, defaults filled in, each checked on its own."""
    data = _mapping(data, "(initial)")
    _unknown(data, PARTITION_KEYS, "")
    partition = _partition(config, data)
    given = _mapping(data.get("replicas") or {}, "replicas")
    for name in given:
        _replica_id(name, f"replicas.{name}", config)
    replicas = tuple(
        _replica(config, name, _mapping(given.get(name) or {}, f"replicas.{name}"), partition)
        for name in config.replicas
    )
    _check_together(partition, replicas)
    return partition, replicas


def _check_together(partition: Controller, replicas: tuple[_GivenReplica, ...]) -> None:
    """INIT-1: what must hold between replicas: the leader's HW is at most the LEO of
    every live ISR member (a replica joins the ISR only once it reached the HW, and the
    HW never passes an ISR member's LEO), and ISR members hold the leader's records
    below its HW (checked on the built state by the StrongIsr invariant). INIT-6: two
    replicas never hold different records of one epoch at one offset."""
    _check_one_record_per_epoch_and_offset(replicas)
    if partition.leader is None:
        return
    by_id = {r.id: r for r in replicas}
    leader = by_id[partition.leader]
    if not leader.online:
        return
    for name in partition.isr:
        member = by_id[name]
        if member.online and member.leo < leader.hw:
            raise InitialStateError(
                f"replicas.{name}.log",
                f"ISR member {name} has LEO {member.leo}, below the leader's HW {leader.hw} (INIT-1)",
            )


def _check_one_record_per_epoch_and_offset(replicas: tuple[_GivenReplica, ...]) -> None:
    """INIT-6: one leader leads an epoch, and it writes each offset once in it (a leader never
    truncates its own log while it leads; a restarted broker leads a new epoch), so a record
    of epoch e at offset o is the same record wherever it is: each replica's copy came from
    that leader (the Log Matching property KIP-101's truncation relies on)."""
    seen: dict[tuple[int, int], tuple[str, Record]] = {}
    for replica in replicas:
        for offset, record in enumerate(replica.records, start=replica.log_start):
            first = seen.setdefault((offset, record.epoch), (replica.id, record))
            if first[1] != record:
                raise InitialStateError(
                    f"replicas.{replica.id}.log[{offset - replica.log_start}]",
                    f"{record.render()} at offset {offset}, where {first[0]} holds {first[1].render()} of the same "
                    "epoch: one leader wrote each offset of an epoch once, so every copy is the same record (INIT-6)",
                )


def given_state(config: Config, data: Mapping[str, Any]) -> State:
    """The state ``data`` describes (see the module doc); raises ``InitialStateError``."""
    from .invariants import check

    config = config.validate()
    partition, given = parse(config, data)
    replicas = []
    for g in given:
        progress: tuple[FollowerProgress, ...] = ()
        if g.role is Role.LEADER:
            progress = tuple(
                FollowerProgress(
                    replica=name,
                    remote_leo=g.remote_leo[name],
                    last_caught_up_ms=g.last_caught_up_ms[name],
                    # A known remote LEO is a fetch at time 0 at the leader's LEO; an unknown
                    # one is a new leader's view: no previous fetch (LAI-2, Kafka 2.6 makeLeader,
                    # 4.x Replica.resetReplicaState), so a first fetch below the LEO earns nothing.
                    last_fetch_leader_leo=None if g.remote_leo[name] is None else g.leo,
                    last_fetch_ms=None if g.remote_leo[name] is None else 0,
                    # ... carrying the follower's broker epoch (KIP-903): incarnation 0.
                    broker_epoch=None if g.remote_leo[name] is None else 0,
                )
                for name in g.remote_leo
            )
        replicas.append(
            Replica(
                id=g.id,
                online=g.online,
                log=log_starting_at(g.log_start, g.records),
                hw=g.hw,
                checkpoint_hw=g.checkpoint_hw,
                epoch_cache=g.epoch_cache,
                role=g.role,
                leader=g.leader,
                leader_epoch=g.leader_epoch,
                fetch_state=g.fetch_state,
                progress=progress,
                started_ms=0,
                incarnation=0,
                log_start=g.log_start,
            )
        )
    state = state_at_start(config, tuple(replicas), partition)
    violations = check(state)
    if violations:
        raise InitialStateError("(initial)", f"not a state a partition can be in: {violations[0]} (INIT-1)")
    return state


def normalise(config: Config, data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with every default spelled out (what ``reset`` sends an implementation)."""
    partition, given = parse(config.validate(), data)
    replicas: dict[str, Any] = {}
    for g in given:
        entry: dict[str, Any] = {
            "online": g.online,
            "log_start": g.log_start,
            "log": [record.render() for record in g.records],
            "leo": g.leo,
            "hw": g.hw,
            "checkpoint_hw": g.checkpoint_hw,
            "epoch_cache": [list(entry) for entry in g.epoch_cache],
            "leader": g.leader,
            "leader_epoch": g.leader_epoch,
            "fetch_state": g.fetch_state.value,
        }
        if g.role is Role.LEADER:
            entry["remote_leo"] = dict(g.remote_leo)
            entry["last_caught_up_ms"] = dict(g.last_caught_up_ms)
        replicas[g.id] = entry
    return {
        "leader": partition.leader,
        "leader_epoch": partition.epoch,
        "partition_epoch": partition.partition_epoch,
        "isr": list(partition.isr),
        "replicas": replicas,
    }
