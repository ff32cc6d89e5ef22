"""Exact reductions of ``kconform explore``'s search: fewer states and transitions, the same
reachable behaviours (docs/explore.md, "Reductions").

Two representations of one partition state: the messages in flight are kept in tuples in
the order they were sent, but every rule reads them as one first-in-first-out queue *per
destination* (a follower's fetch or epoch answers, a broker's LeaderAndIsr, a leader's
AlterPartition): ``next(m for m in queue if m.dst == r)``, ``any(m.dst == r ...)`` or a
filter by destination. Two states whose queues differ only in how messages to *different*
destinations interleave therefore behave alike under every step, and every observation
of theirs differs only in that order. ``canonical`` sorts each queue by destination,
stably (the order within one destination is kept): equal canonical forms are states with
the same future, so the search continues only one of them. The tree still holds real
states reached by real paths; only the deduplication key is canonical.

A step that provably changes nothing (``pointless``) is never tried: its edge would be a
self-loop, which the search drops anyway. Partial-order reduction by sleep sets
(``independent``): when a state took ``b`` and then ``a``, with ``a`` and ``b``
independent, the state ``a`` reached need not take ``b`` (``b`` then ``a`` reaches the same
state). The search is breadth-first with states merged, so a state's sleep set is the
intersection over every arrival at its depth; docs/explore.md argues why every state
within the depth is still visited.

Symmetry (renaming followers) is *not* exact for one config: the controller elects the
first eligible replica in assignment order (CTRL-ELECT-1) and handles failed brokers in
that order (CTRL-FAIL-1/2), so renaming two followers changes who a later election
picks; ``renamings`` offers it as an opt-in under-approximation (``--symmetry``).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import permutations
from operator import attrgetter
from typing import Any

from reference_impl import State, Step
from reference_impl.alter_partition import changes_isr
from reference_impl.state import Controller, Replica
from reference_impl.steps import Crash, IsrExpiration, Tick
from reference_impl.values import evolve

_dst = attrgetter("dst")
_leader = attrgetter("leader")
_follower = attrgetter("follower")


def _sorted(queue: tuple[Any, ...], key: Any) -> tuple[Any, ...]:
    if len(queue) < 2:
        return queue
    ordered = tuple(sorted(queue, key=key))  # stable: one destination's order is kept
    return queue if ordered == queue else ordered


def canonical(state: State) -> State:
    """``state`` without ``fired`` (what only describes the last step) and with its
    message queues ordered by destination (the module doc): equal results are states
    every step treats alike."""
    if state.fired:
        state = evolve(state, fired=())
    if (
        len(state.fetch_responses) < 2
        and len(state.epoch_responses) < 2
        and len(state.leader_and_isr) < 2
        and len(state.parked_fetches) < 2
        and len(state.alter_partitions) < 2
        and len(state.fenced_proposals) < 2
    ):
        return state  # nothing to order (most states)
    changes: dict[str, Any] = {}
    for name, key in (
        ("fetch_responses", _dst),
        ("epoch_responses", _dst),
        ("leader_and_isr", _dst),
        ("parked_fetches", _follower),
        ("alter_partitions", _leader),
        ("fenced_proposals", _leader),
    ):
        queue = getattr(state, name)
        ordered = _sorted(queue, key)
        if ordered is not queue:
            changes[name] = ordered
    return evolve(state, **changes) if changes else state


def pointless(state: State, step: Step) -> bool:
    """True if ``step`` certainly leaves ``state`` unchanged but for ``fired``: with no
    answer delivered by the last step (every step clears ``delivered``), an
    ``isr_expiration`` on a broker that changes no ISR (``changes_isr``: not the current
    leader, or under diverging-epoch not a leader in its own view), or whose ISR followers
    have all been caught up within ``replica.lag.time.max.ms`` (ISR-SHRINK-1/2 drop only
    a follower lagging longer; ISR-SHRINK-3). Conservative: False when unsure."""
    if not isinstance(step, IsrExpiration) or state.delivered:  # every step clears ``delivered``
        return False
    replica = state.replica(step.replica)
    if not changes_isr(state, replica):  # DE: also a leader of an older epoch (ISR-ALTER-5)
        return True
    lag = state.config.replica_lag_time_max_ms
    isr = state.controller.isr
    for p in replica.progress:
        if p.replica in isr and (p.last_caught_up_ms is None or state.clock_ms - p.last_caught_up_ms > lag):
            return False
    return True


SLEEPERS = (Tick, Crash)
"""The step types ``independent`` can call independent of another: only after one of
these does the search look for steps to put to sleep."""


def independent(a: Step, b: Step) -> bool:
    """Two steps that commute in every state where both are enabled: each stays enabled
    after the other, and both orders reach states with one canonical form. Conservative:
    only pairs whose effects provably do not meet.

    - Two ticks of different lengths: a tick fires, in time order, every timer due in the
      interval it covers (TICK-1); ``x`` then ``y`` and ``y`` then ``x`` cover the same
      interval and fire the same timers in the same order, and a tick delivers nothing.
    - Crashes of two different brokers: a crash (CRASH-1/2) changes only its own broker,
      the messages to it and from it (dropped) and the produces waiting on it (failed);
      the controller learns of it only at the next ``elect``. Neither reads what the
      other writes, and neither delivers an answer.

    Everything else is dependent: steps that touch the leader (produce, fetch, an
    election) read and write its log, HW and the ISR; a delivery sets ``delivered``,
    which the next step clears. ``tests/test_explore_reduce.py`` checks every pair this
    calls independent in every state of a search. Only two steps of one class are ever
    independent (``explore`` looks for sleepers among those only)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, Tick) and isinstance(b, Tick):
        return a.ms != b.ms
    if isinstance(a, Crash) and isinstance(b, Crash):
        return a.replica != b.replica
    return False


def renamings(state: State, followers: tuple[str, ...]) -> Iterator[State]:
    """``state`` with ``followers`` permuted in every way (the identity first), as states
    of the same config: replica ids renamed everywhere they occur, the per-replica tuples
    put back in replica order. For ``--symmetry`` only (not exact: the module doc)."""
    order = state.config.position
    for image in permutations(followers):
        mapping = dict(zip(followers, image, strict=True))
        if all(a == b for a, b in mapping.items()):
            yield state
            continue
        yield _rename(state, mapping, order)


def _r(name: str | None, mapping: dict[str, str]) -> str | None:
    return mapping.get(name, name) if name is not None else None


def _ids(names: tuple[str, ...], mapping: dict[str, str], order: dict[str, int]) -> tuple[str, ...]:
    return tuple(sorted((mapping.get(n, n) for n in names), key=order.__getitem__))


def _rename(state: State, m: dict[str, str], order: dict[str, int]) -> State:
    def replica(r: Replica) -> Replica:
        progress = tuple(
            sorted(
                (evolve(p, replica=m.get(p.replica, p.replica)) for p in r.progress),
                key=lambda p: order[p.replica],
            )
        )
        return evolve(r, id=m.get(r.id, r.id), leader=_r(r.leader, m), progress=progress, isr=_ids(r.isr, m, order))

    replicas = tuple(sorted((replica(r) for r in state.replicas), key=lambda r: order[r.id]))
    ctrl: Controller = state.controller
    controller = evolve(ctrl, leader=_r(ctrl.leader, m), isr=_ids(ctrl.isr, m, order), down=_ids(ctrl.down, m, order))

    def msg(x: Any) -> Any:
        changes: dict[str, Any] = {}
        for name in ("dst", "src", "leader", "follower"):
            if name in x.__dict__ and x.__dict__[name] is not None:
                changes[name] = m.get(x.__dict__[name], x.__dict__[name])
        if "isr" in x.__dict__:
            changes["isr"] = _ids(x.isr, m, order)
        return evolve(x, **changes)

    consumed = state.consumed
    if consumed is not None and consumed.replica is not None:
        consumed = evolve(consumed, replica=m.get(consumed.replica, consumed.replica))
    query = state.epoch_query
    if query is not None:
        query = evolve(query, replica=m.get(query.replica, query.replica))
    delivered = tuple(evolve(d, message=msg(d.message)) for d in state.delivered)
    return evolve(
        state,
        replicas=replicas,
        controller=controller,
        fetch_responses=tuple(msg(x) for x in state.fetch_responses),
        parked_fetches=tuple(msg(x) for x in state.parked_fetches),
        epoch_responses=tuple(msg(x) for x in state.epoch_responses),
        leader_and_isr=tuple(msg(x) for x in state.leader_and_isr),
        pending_produces=tuple(msg(x) for x in state.pending_produces),
        alter_partitions=tuple(msg(x) for x in state.alter_partitions),
        fenced_proposals=tuple(msg(x) for x in state.fenced_proposals),
        consumed=consumed,
        epoch_query=query,
        delivered=delivered,
    )


def symmetric_key(state: State, followers: tuple[str, ...]) -> State:
    """The canonical form least by hash (then by ``repr``, on a tie between different
    states) among the renamings of ``followers``: equal keys are states equal up to
    renaming those followers and reordering their queues."""
    keys = [canonical(renamed) for renamed in renamings(state, followers)]
    low = min(hash(k) for k in keys)
    tied = [k for k in keys if hash(k) == low]
    if len(tied) == 1 or all(k == tied[0] for k in tied):
        return tied[0]
    return min(tied, key=repr)


def followers_of(state: State) -> tuple[str, ...]:
    """The replicas ``--symmetry`` may rename in ``state``: every one but the leader the
    controller has chosen (all of them while the partition has none)."""
    leader = state.controller.leader
    return tuple(r for r in state.config.replicas if r != leader)


__all__ = ["SLEEPERS", "canonical", "followers_of", "independent", "pointless", "renamings", "symmetric_key"]
