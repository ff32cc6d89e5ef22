"""The state as plain data: what fixtures assert on and adapters report.

The observation is JSON-ready (dicts, lists, strings, ints, bools, None). Fixtures
state a subset of it; the runner compares only the fields a fixture states. The field
list is ``OBSERVATION_FIELDS``; an adapter that exposes fewer says so in its
capabilities.
"""

from __future__ import annotations

from typing import Any

from . import epoch_cache
from . import log as logmod
from .describe import describe_message
from .history import History
from .messages import EpochResponse, FetchResponse, ParkedFetch
from .state import FetchState, ProduceOutcome, Replica, Role, State

REPLICA_FIELDS = (
    "online",
    "role",
    "leader",
    "leader_epoch",
    "leo",
    "hw",
    "checkpoint_hw",
    "log",
    "epoch_cache",
    "fetch_state",
    "remote_leo",
    "log_start",
)
"""Per replica. ``remote_leo`` (the leader's view of each follower) only on a leader.
``log`` lists the records from ``log_start`` on (LOG-START-1)."""

OBSERVATION_FIELDS = (
    "clock_ms",
    "leader",
    "leader_epoch",
    "isr",
    "partition_epoch",
    "replicas",
    "producer",
    "consumer",
    "epoch_query",
    "in_flight",
    "answers",
)


_ROLE = {role: role.value for role in Role}
_FETCH_STATE = {state: state.value for state in FetchState}
# The enums' plain-string values, looked up (``.value`` goes through a descriptor: most
# of an observation's cost was these two and the function calls below).


class LogRecords(list[str]):
    """A replica's log in an observation: the ``value@epoch`` list, which also carries
    the ``Log`` it was read from (``source``), so a judge can learn where two logs first
    differ without reading them (``agreed_prefix``: the log remembers it per pair of
    buffers). Equal to, and encoded as, a plain list.

    Made by an ``Observer`` from the same replica's log at the previous step, it also says
    so: its first ``kept`` records are those of ``base`` (that observation's log), so a
    judge that checked ``base`` checks only the rest (``observation_check``: a growing log
    costs what was appended). Only one step back: making the next one drops this one's
    ``base``, so a long run does not keep every version of a log alive."""

    __slots__ = ("base", "kept", "source")

    def __init__(self, records: list[str], source: logmod.Log, base: list[str] | None = None, kept: int = 0) -> None:
        super().__init__(records)
        self.source = source
        self.base = base
        self.kept = kept


class Amended(dict[str, Any]):
    """A mapping in an observation made from an earlier observation's mapping (its base) by
    setting or removing the keys in ``changed``: the produce outcomes of a long run, where
    one step changes one or two of a thousand entries. Equal to, and encoded as, a plain
    dict; a judge that matched the base compares only ``changed`` (``changed_keys``,
    ``compare.matches_since``) instead of every entry. The reference's ``Observer``, a corpus
    trace's expectations (``corpus.format.apply_changes``) and stdio deltas
    (``adapters.deltas``) make them.

    An amended base is remembered by its ``token`` (an object of its own), not held: a long
    run does not keep every earlier version alive through a chain of bases. A plain dict
    base is held (the chain ends there)."""

    __slots__ = ("_from", "changed", "token")
    token: object
    changed: tuple[str, ...] | list[str]

    def __init__(self, base: dict[str, Any], changed: tuple[str, ...] | list[str] = ()) -> None:
        super().__init__(base)
        self._from: object = base.token if type(base) is Amended else base
        self.changed = changed
        self.token = object()

    @property
    def made_from(self) -> object:
        """What this mapping was made from: its base, or an amended base's ``token``."""
        return self._from

    def amends(self, old: Any) -> bool:
        """Whether this mapping was made from ``old`` (by its ``changed`` keys)."""
        made_from = self._from
        return made_from is old or (type(old) is Amended and made_from is old.token)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (and copied) as the plain dict it equals: its base is this process's."""
        return (dict, (dict(self),))


AMENDED_FROM = 16
"""A mapping with more entries than this is made ``Amended`` (the produce outcomes of a long
run); a smaller one is compared whole as cheaply as by its changed keys, and copied more
cheaply as a plain dict."""


def changed_keys(new: Any, old: Any) -> tuple[str, ...] | list[str] | None:
    """The keys by which mapping ``new`` differs from ``old`` where that is known without
    reading them: none when they are the same object, ``new.changed`` when ``new`` was
    amended from ``old``; None (unknown) otherwise."""
    if new is old:
        return ()
    if type(new) is Amended and new.amends(old):
        return new.changed
    return None


def agreed_prefix(a: list[Any], b: list[Any], start_a: int = 0, start_b: int = 0) -> int:
    """How many leading entries two observed logs (starting at those offsets) are known
    to share without reading them: for two ``LogRecords`` from logs with the same start,
    up to where their logs first differ (``Log.first_difference``); for a log made from the
    other one step on (its ``base``: an ``Observer``'s ``LogRecords`` or a stdio delta's
    ``Grown`` log), the records it kept; 0 otherwise."""
    if start_a != start_b:
        return 0
    if type(a) is not list and getattr(a, "base", None) is b:
        return a.kept  # type: ignore[attr-defined, no-any-return]
    if type(b) is not list and getattr(b, "base", None) is a:
        return b.kept  # type: ignore[attr-defined, no-any-return]
    la: logmod.Log | None = getattr(a, "source", None)
    lb: logmod.Log | None = getattr(b, "source", None)
    if la is None or lb is None:
        return 0
    n = min(len(a), len(b))
    return la.first_difference(lb, start_a, start_a + n) - start_a


def observe_replica(
    replica: Replica, shared: bool = False, before: tuple[Replica, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """One replica as plain data. ``shared`` (``Observer``): the log as ``LogRecords``,
    saying where it was read from; ``before``, the same replica at an earlier step and its
    observation: an unchanged log or epoch cache is that observation's list, and a cache
    that gained or lost entries at its end is rendered only there."""
    log, cache = replica.log, replica.epoch_cache
    records: list[str] | None = None
    rendered_cache: list[list[int]] | None = None
    if before is not None:
        old, seen = before
        if old.log is log and old.log_start == replica.log_start:
            records = seen["log"]
        old_cache = old.epoch_cache
        if old_cache is cache:
            rendered_cache = seen["epoch_cache"]
        elif len(cache) >= len(old_cache) and cache[: len(old_cache)] == old_cache:  # entries added
            rendered_cache = seen["epoch_cache"] + epoch_cache.render(cache[len(old_cache) :])
        elif cache == old_cache[: len(cache)]:  # entries dropped from the end (a truncation)
            rendered_cache = seen["epoch_cache"][: len(cache)]
    if records is None and shared:
        records = LogRecords(log.rendered(replica.log_start), log)
        if before is not None and before[0].log_start == replica.log_start:
            previous = before[1]["log"]
            records.base, records.kept = (
                previous,
                agreed_prefix(previous, records, replica.log_start, replica.log_start),
            )
            if type(previous) is LogRecords:
                previous.base = None  # one step back only (the class doc)
    elif records is None:
        records = log.rendered(replica.log_start)
    out: dict[str, Any] = {
        "online": replica.online,
        "role": _ROLE[replica.role],
        "leader": replica.leader,
        "leader_epoch": replica.leader_epoch,
        "leo": log.end,
        "hw": replica.hw,
        "checkpoint_hw": replica.checkpoint_hw,
        "log": records,
        "epoch_cache": epoch_cache.render(cache) if rendered_cache is None else rendered_cache,
        "fetch_state": _FETCH_STATE[replica.fetch_state],
    }
    if replica.progress:
        out["remote_leo"] = {p.replica: p.remote_leo for p in replica.progress}
    out["log_start"] = replica.log_start
    return out


def observe_in_flight(state: State) -> dict[str, Any]:
    """One canonical line per message, in a stable order (see ``describe.py``)."""
    parked, fetch, epoch = state.parked_fetches, state.fetch_responses, state.epoch_responses
    lai, pending, alter = state.leader_and_isr, state.pending_produces, state.alter_partitions
    if not (parked or fetch or epoch or lai or pending or alter):  # the common case
        return {
            "parked_fetches": [],
            "fetch_responses": [],
            "epoch_responses": [],
            "leader_and_isr": [],
            "pending_produces": [],
            "alter_partitions": [],
        }
    return {
        "parked_fetches": [describe_message(m) for m in parked],
        "fetch_responses": [describe_message(m) for m in fetch],
        "epoch_responses": [describe_message(m) for m in epoch],
        "leader_and_isr": [describe_message(m) for m in lai],
        "pending_produces": [describe_message(m) for m in pending],
        "alter_partitions": [describe_message(m) for m in alter],
    }


def fetch_answer(message: FetchResponse | ParkedFetch, status: str) -> dict[str, Any]:
    """A fetch answer as data, field by field (OBS-ANSWER-1). A parked fetch has no
    answer yet: only the request's fields and its deadline are set."""
    if isinstance(message, ParkedFetch):
        return {
            "status": status,
            "from": message.leader,
            "current_epoch": message.request_epoch,
            "fetch_offset": message.fetch_offset,
            "deadline_ms": message.deadline_ms,
            "records": None,
            "hw": None,
            "log_start": None,
            "error": None,
            "diverging_epoch": None,
            "leader_leo": None,
        }
    diverging = message.diverging_epoch
    return {
        "status": status,
        "from": message.src,
        "current_epoch": message.request_epoch,
        "fetch_offset": message.fetch_offset,
        "deadline_ms": None,
        "records": logmod.render(message.records),
        "hw": message.hw,
        "log_start": message.log_start,
        "error": message.error,
        "diverging_epoch": None if diverging is None else {"epoch": diverging[0], "end_offset": diverging[1]},
        "leader_leo": message.leader_leo,
    }


def epoch_answer(message: EpochResponse, status: str) -> dict[str, Any]:
    """An OffsetsForLeaderEpoch answer as data, field by field (OBS-ANSWER-1)."""
    return {
        "status": status,
        "from": message.src,
        "current_epoch": message.request_epoch,
        "requested_epoch": message.requested_epoch,
        "error": message.error,
        "epoch": message.epoch,
        "end_offset": message.end_offset,
    }


def observe_answers(state: State) -> dict[str, Any]:
    """Per replica, the fetch and the OffsetsForLeaderEpoch answer it is waiting for or
    just received (OBS-ANSWER-1); None when there is none."""
    names = state.config.replicas
    fetch: dict[str, Any] = dict.fromkeys(names)
    epoch: dict[str, Any] = dict.fromkeys(names)
    if not (state.parked_fetches or state.fetch_responses or state.epoch_responses or state.delivered):
        return {"fetch": fetch, "epoch": epoch}  # the common case: nothing to show
    rank: dict[tuple[str, str], int] = {}
    # Lowest rank wins: an outstanding answer, then one delivered by this step, then a stale one.
    for done in state.delivered:
        status = "dropped" if done.dropped else "delivered"
        message = done.message
        if isinstance(message, FetchResponse):
            fetch[message.dst], rank["fetch", message.dst] = fetch_answer(message, status), 1
        else:
            epoch[message.dst], rank["epoch", message.dst] = epoch_answer(message, status), 1
    for parked in state.parked_fetches:
        current = parked.incarnation == state.replica(parked.follower).incarnation
        if rank.get(("fetch", parked.follower), 3) > (0 if current else 2):
            fetch[parked.follower] = fetch_answer(parked, "parked" if current else "stale")
            rank["fetch", parked.follower] = 0 if current else 2
    for response in state.fetch_responses:
        fetch[response.dst], rank["fetch", response.dst] = fetch_answer(response, "in_flight"), 0
    for answer in state.epoch_responses:
        epoch[answer.dst] = epoch_answer(answer, "in_flight")
    return {"fetch": fetch, "epoch": epoch}


_QUEUES = (
    "parked_fetches",
    "fetch_responses",
    "epoch_responses",
    "leader_and_isr",
    "pending_produces",
    "alter_partitions",
)
"""The ``in_flight`` fields, in the order ``observe_in_flight`` gives them."""


class Observer:
    """``observe``, sharing with the observations it made before the parts that did not
    change: a replica that is the same (immutable) object as before is the same dict, a
    log or an epoch cache that did not change is the same list, the producer outcomes
    the same dict while no outcome changed, and logs say where they were read from
    (``LogRecords``). A judge compares, validates and monitors such parts by identity
    first (``conformance``: the in-process reference adapter), so a step costs what it
    changed. What it returns must not be modified: the parts are shared across steps.

    Any state may follow any other (a checker rewinding, a new run): only identities are
    trusted, never the order of states."""

    def __init__(self) -> None:
        self._replicas: dict[str, tuple[Replica, dict[str, Any]]] = {}
        self._produces: tuple[History[ProduceOutcome], dict[str, str]] | None = None
        self._isr: tuple[object, list[str]] | None = None
        self._mapping: tuple[tuple[Replica, ...], dict[str, dict[str, Any]]] | None = None
        self._flight: tuple[tuple[object, ...], dict[str, Any]] | None = None
        self._queues: dict[str, tuple[tuple[Any, ...], list[str]]] = {}
        """Per message queue: the tuple last rendered and its lines (a queue that did not
        change keeps its list when another one changed)."""
        self._answers: tuple[tuple[object, ...], dict[str, Any]] | None = None
        self._consumer: tuple[object, dict[str, Any] | None] | None = None
        self._epoch_query: tuple[object, dict[str, Any] | None] | None = None

    def replica(self, replica: Replica) -> dict[str, Any]:
        seen = self._replicas.get(replica.id)
        if seen is not None and seen[0] is replica:
            return seen[1]
        out = observe_replica(replica, True, seen)
        self._replicas[replica.id] = (replica, out)
        return out

    def replicas(self, replicas: tuple[Replica, ...]) -> dict[str, dict[str, Any]]:
        """Every replica; the mapping made before when no replica changed."""
        seen = self._mapping
        if seen is not None and seen[0] is replicas:
            return seen[1]
        out = {r.id: self.replica(r) for r in replicas}
        if seen is not None and len(seen[1]) == len(out):
            before = seen[1]
            for name, rep in out.items():
                if before.get(name) is not rep:
                    break
            else:
                out = before
        self._mapping = (replicas, out)
        return out

    def producer(self, state: State) -> dict[str, str]:
        """The producer outcomes: the dict made before while no outcome changed, else a
        copy of it with the outcomes of the history's changed chunks (``History.changed_since``)."""
        produces = state.produces
        seen = self._produces
        if seen is not None and seen[0] is produces:
            return seen[1]
        changed = produces.changed_since(seen[0]) if seen is not None else None
        if seen is None or changed is None or any(produces.positions(o.id) != 1 for o in changed):
            out = {o.id: o.status for o in produces}
        else:  # a long run's: amended, so a judge that matched the last one reads only these
            base = seen[1]
            out = Amended(base, [o.id for o in changed]) if len(base) > AMENDED_FROM else dict(base)
            for o in changed:
                out[o.id] = o.status
        self._produces = (produces, out)
        return out

    def in_flight(self, state: State) -> dict[str, Any]:
        """The messages in flight: the mapping made before while no message queue changed
        (the queues are immutable tuples, kept as the same objects by a step that does not
        touch them), and each queue's list made before while that queue did not change."""
        parked, fetch, epoch = state.parked_fetches, state.fetch_responses, state.epoch_responses
        lai, pending, alter = state.leader_and_isr, state.pending_produces, state.alter_partitions
        seen = self._flight
        if seen is not None:
            k = seen[0]
            if k[0] is parked and k[1] is fetch and k[2] is epoch and k[3] is lai and k[4] is pending and k[5] is alter:
                return seen[1]
        queues = self._queues
        out = {}
        now: tuple[tuple[Any, ...], ...] = (parked, fetch, epoch, lai, pending, alter)
        for name, queue in zip(_QUEUES, now, strict=True):
            rendered = queues.get(name)
            if rendered is None or rendered[0] is not queue:  # this queue changed: rendered again
                rendered = queues[name] = (queue, [describe_message(m) for m in queue])
            out[name] = rendered[1]
        self._flight = (now, out)
        return out

    def answers(self, state: State) -> dict[str, Any]:
        """The answers: the mapping made before while none of what they are read from
        changed (the queues, the deliveries of the last step, the replica names, and, when a
        fetch is parked, the replicas, whose incarnations decide whether it is stale)."""
        parked, fetch, epoch, delivered = (
            state.parked_fetches,
            state.fetch_responses,
            state.epoch_responses,
            state.delivered,
        )
        names, replicas = state.config.replicas, state.replicas if parked else None
        seen = self._answers
        if seen is not None:
            k = seen[0]
            if (
                k[0] is parked
                and k[1] is fetch
                and k[2] is epoch
                and k[3] is delivered
                and k[4] is names
                and k[5] is replicas
            ):
                return seen[1]
        out = observe_answers(state)
        self._answers = ((parked, fetch, epoch, delivered, names, replicas), out)
        return out

    def consumer(self, state: State) -> dict[str, Any] | None:
        """The last consume's result: the mapping made before while it is the same object."""
        seen = self._consumer
        if seen is not None and seen[0] is state.consumed:
            return seen[1]
        out = observe_consumer(state)
        self._consumer = (state.consumed, out)
        return out

    def epoch_query(self, state: State) -> dict[str, Any] | None:
        """The last epoch query's answer: the mapping made before while it is the same object."""
        seen = self._epoch_query
        if seen is not None and seen[0] is state.epoch_query:
            return seen[1]
        out = observe_epoch_query(state)
        self._epoch_query = (state.epoch_query, out)
        return out

    def isr(self, state: State) -> list[str]:
        """The ISR: the list made before while it is the same (immutable) tuple."""
        isr = state.controller.isr
        seen = self._isr
        if seen is not None and seen[0] is isr:
            return seen[1]
        out = list(isr)
        self._isr = (isr, out)
        return out

    def __call__(self, state: State) -> dict[str, Any]:
        return observe(state, self)


def observe_consumer(state: State) -> dict[str, Any] | None:
    """What the last consume got, or None before any."""
    c = state.consumed
    if c is None:
        return None
    return {"offset": c.offset, "records": [f"{value}@{epoch}" for _, value, epoch in c.records], "error": c.error}


def observe_epoch_query(state: State) -> dict[str, Any] | None:
    """The last OffsetsForLeaderEpoch query's answer, or None before any."""
    q = state.epoch_query
    if q is None:
        return None
    return {
        "replica": q.replica,
        "requested_epoch": q.requested_epoch,
        "error": q.error,
        "leader_epoch": q.epoch,
        "end_offset": q.end_offset,
    }


def observe(state: State, observer: Observer | None = None) -> dict[str, Any]:
    """The whole observable state (``observer``: its shared parts, ``Observer``)."""
    if observer is None:
        consumer, epoch_query = observe_consumer(state), observe_epoch_query(state)
    else:
        consumer, epoch_query = observer.consumer(state), observer.epoch_query(state)
    ctrl = state.controller
    return {
        "clock_ms": state.clock_ms,
        "leader": ctrl.leader,
        "leader_epoch": ctrl.epoch,
        "isr": list(ctrl.isr) if observer is None else observer.isr(state),
        "partition_epoch": ctrl.partition_epoch,
        "replicas": {r.id: observe_replica(r) for r in state.replicas}
        if observer is None
        else observer.replicas(state.replicas),
        "producer": {o.id: o.status for o in state.produces} if observer is None else observer.producer(state),
        "consumer": consumer,
        "epoch_query": epoch_query,
        "in_flight": observe_in_flight(state) if observer is None else observer.in_flight(state),
        "answers": observe_answers(state) if observer is None else observer.answers(state),
    }
