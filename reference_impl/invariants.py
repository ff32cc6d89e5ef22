"""The invariants, each a named check with the reason it matters.

State invariants look at one state; transition invariants at a step's before and
after. ``check`` returns the violations (empty when all hold) rather than raising, so
property tests can both assert they hold (epoch generations) and search for a
violation (hw-truncation: the KIP-101 stories).

Two invariants read histories that only grow (the committed records, the last consumed
records). ``check(state, before)`` checks them incrementally: it keeps what it found on
each state it checked (``state.MEMO``), and when ``before`` was checked it looks only at
what the step can have changed: the committed records added since, and the ones that
were already violated. Each invariant function without ``before`` is the full check;
``tests/test_invariants.py`` compares both on random traces.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .epoch_cache import UNDEFINED_EPOCH, EpochCache
from .history import History
from .log import Log
from .state import LEADER, MEMO, Replica, State


@dataclass(frozen=True)
class Violation:
    invariant: str
    detail: str

    def __str__(self) -> str:
        return f"{self.invariant}: {self.detail}"


def hw_le_leo(state: State) -> list[Violation]:
    """HwLeLeo: on every replica the HW is at most the LEO. A consumer reads below the
    HW, so an HW above the LEO would promise records the replica does not have."""
    return [
        Violation("HwLeLeo", f"{r.id} hw={r.hw} > leo={r.leo}")
        for r in state.replicas
        if r.hw > r.leo or r.checkpoint_hw < 0
    ]


def strong_isr(state: State) -> list[Violation]:
    """StrongIsr: every live ISR member holds exactly the leader's records below the
    leader's HW. This is what makes any ISR member a safe leader (TLA+ ``StrongIsr``).
    After a power failure a member may merely *lack* records (its log a prefix of the
    leader's, shorter than the HW): it lost its unflushed tail and is still in the ISR when
    it restarts (Kafka's unclean shutdown; KIP-966). Holding different records is still a
    violation (KIP-101's divergence)."""
    out: list[Violation] = []
    ctrl = state.controller
    leader_id = ctrl.leader
    if leader_id is None:  # only the controller's leader can be the current leader
        return out
    replicas, position = state.replicas, state.config.position
    leader = replicas[position[leader_id]]
    if not (leader.online and leader.role is LEADER and leader.leader_epoch == ctrl.epoch):  # is_current_leader
        return out
    hw = leader.hw
    for name in ctrl.isr:
        if name == leader_id:
            continue
        member = replicas[position[name]]
        if not member.online:
            continue
        if not _same_below(member, leader, hw):
            lost_from = state.power_lost_from
            if lost_from is not None and (
                (member.leo < leader.hw and _lacks_only(member, leader))
                or (state.config.profile.keeps_epoch_cache and _same_below(member, leader, lost_from))
            ):
                # A lost tail; or, where followers truncate by leader epoch, records written
                # over it since, which that truncation removes (under hw-truncation they
                # stay: KIP-101's divergence).
                continue
            out.append(
                Violation(
                    "StrongIsr",
                    f"ISR member {name} disagrees with leader {leader.id} below hw={leader.hw}",
                )
            )
    return out


def _lacks_only(member: Replica, leader: Replica) -> bool:
    """The member's log is a prefix of the leader's (it lacks records, holds no others),
    from where both logs still have records (LOG-START-1)."""
    start = max(member.log_start, leader.log_start)
    end = member.leo
    return end <= start or (end <= leader.leo and member.log.first_difference(leader.log, start, end) == end)


def _same_below(member: Replica, leader: Replica, end: int) -> bool:
    """The member holds the leader's records below ``end`` (at most the leader's HW), from
    where both logs still have records (LOG-START-1: nothing is compared below a log start).
    Where the two logs first differ is remembered per pair of buffers (``Log.first_difference``),
    so a long run compares each offset once, not the whole prefix at every step."""
    end = min(end, leader.hw)
    start = max(member.log_start, leader.log_start)
    if end <= start:
        return True
    mine, theirs = min(end, member.leo), min(end, leader.leo)
    return mine == theirs and member.log.first_difference(leader.log, start, mine) == mine


def acked_not_lost(state: State) -> list[Violation]:
    """AckedNotLost: a record acknowledged to an acks=all producer, or returned to a
    consumer, stays in the leader's log at its offset, unless an unclean election
    happened (which gives that guarantee up by configuration) or a power failure lost
    unflushed records (Kafka does not fsync per write; KIP-101 scenario 2)."""
    if state.unclean_elections or state.power_failures:
        return []
    leader_id = state.controller.leader
    if leader_id is None:
        return []
    leader = state.replica(leader_id)
    if not state.is_current_leader(leader):
        return []
    return _acked_not_lost_among(state, leader_id, state.committed)


SMALL = 64
"""Below this many records a history invariant is checked in full (cheaper than its memo)."""


def _memo(state: State) -> dict[str, Any]:
    """The state's memo, as a dict that may be written to."""
    memo = state.__dict__.get(MEMO)
    if isinstance(memo, dict):
        return memo
    fresh: dict[str, Any] = {} if memo is None else {CLEAN: True}  # None, or CLEAN_ONLY
    state.__dict__[MEMO] = fresh
    return fresh


def _acked_not_lost_incremental(state: State, before: State) -> list[Violation]:
    """AckedNotLost from ``before``'s result. The committed records only grew, so a new
    record may be lost and a lost one may be back; a record kept before can be lost now
    only at an offset where the leader's log changed: at or above where it first differs
    from the log checked before (``Log.first_difference``). A leader change (or a leader
    whose log was cut) is looked at only there, and the whole history only when a
    committed record lies at or above that offset."""
    if len(state.committed) < SMALL:  # cheaper to look than to remember
        return acked_not_lost(state)
    if state.unclean_elections or state.power_failures:
        return []
    previous = _memo(before).get("AckedNotLost")
    leader_id = state.controller.leader
    if previous is None or leader_id is None:
        return acked_not_lost(state)
    old_log: Log = previous[1]
    old_committed: History[tuple[int, str, int]] = previous[2]
    lost: list[tuple[int, str, int]] = previous[3]
    top: int = previous[4]
    leader = state.replica(leader_id)
    log, committed = leader.log, state.committed
    if not state.is_current_leader(leader) or not committed.starts_with(old_committed):
        return acked_not_lost(state)
    if log is not old_log:
        n = min(len(log), len(old_log))
        same = log.first_difference(old_log, 0, n)  # below it every offset holds what it held
        if same < len(old_log) and same <= top:  # a record kept before may be gone
            return acked_not_lost(state)
    new = [committed[i] for i in range(len(old_committed), len(committed))]
    for offset, _, _ in new:
        top = max(top, offset)
    return _acked_not_lost_among(state, leader_id, [*lost, *new], top)


def _acked_not_lost_among(
    state: State, leader_id: str, records: Iterable[tuple[int, str, int]], top: int | None = None
) -> list[Violation]:
    """The violations among ``records``; remembers the lost ones, the leader's log and
    ``top``, the highest committed offset (all of ``records`` when None)."""
    log = state.replica(leader_id).log
    leo, start = len(log), state.replica(leader_id).log_start
    lost = []
    out = []
    highest = -1
    for offset, value, epoch in records:
        if offset > highest:
            highest = offset
        if offset < start:
            continue  # below the log start: deleted by retention, not lost (as SAFE-ACKED)
        if offset < leo:
            record = log[offset]
            if record.value == value and record.epoch == epoch:
                continue
        lost.append((offset, value, epoch))
        have = log[offset].render() if offset < leo else "nothing"
        out.append(
            Violation(
                "AckedNotLost",
                f"committed {value}@{epoch} at offset {offset} is gone from leader {leader_id} (has {have})",
            )
        )
    if len(state.committed) >= SMALL // 2:
        _memo(state)["AckedNotLost"] = (leader_id, log, state.committed, lost, highest if top is None else top)
    return out


def consumer_below_hw(state: State) -> list[Violation]:
    """ConsumerBelowHw: a consumer only ever receives offsets below the HW it read at."""
    c = state.consumed
    if c is None or c.hw is None:
        return []
    return [
        Violation("ConsumerBelowHw", f"consumer got offset {offset} with hw={c.hw}")
        for offset, _, _ in c.records
        if offset >= c.hw
    ]


def _consumer_below_hw_incremental(state: State, before: State) -> list[Violation]:
    """ConsumerBelowHw: the consumer's outcome changes only on a ``consume`` step; the
    same outcome object has the same violations as when ``before`` was checked."""
    consumed = state.consumed
    if consumed is None or len(consumed.records) < SMALL:  # cheaper to look than to remember
        return consumer_below_hw(state)
    previous = _memo(before).get("ConsumerBelowHw")
    if previous is not None and previous[0] is state.consumed:
        result: list[Violation] = previous[1]
    else:
        result = consumer_below_hw(state)
    _memo(state)["ConsumerBelowHw"] = (state.consumed, result)
    return list(result)


def one_leader_per_epoch(state: State) -> list[Violation]:
    """OneLeaderPerEpoch: no two live replicas lead in the same epoch."""
    seen: dict[int, str] = {}
    out = []
    for r in state.replicas:
        if r.online and r.role is LEADER:
            if r.leader_epoch in seen:
                out.append(
                    Violation("OneLeaderPerEpoch", f"{seen[r.leader_epoch]} and {r.id} lead epoch {r.leader_epoch}")
                )
            seen[r.leader_epoch] = r.id
    return out


def epoch_cache_monotonic(state: State) -> list[Violation]:
    """EpochCacheMonotonic: epochs and start offsets strictly increase in every cache,
    and no entry starts beyond the log (the cache describes the log)."""
    out = []
    for r in state.replicas:
        cache = r.epoch_cache
        for (e1, o1), (e2, o2) in itertools.pairwise(cache):
            if not (e1 < e2 and o1 < o2):
                out.append(Violation("EpochCacheMonotonic", f"{r.id} cache {list(cache)} is not increasing"))
                break
        if cache and cache[-1][1] > r.leo:
            out.append(Violation("EpochCacheMonotonic", f"{r.id} cache entry {cache[-1]} starts past leo={r.leo}"))
    return out


STATE_INVARIANTS: dict[str, Callable[[State], list[Violation]]] = {
    "HwLeLeo": hw_le_leo,
    "StrongIsr": strong_isr,
    "AckedNotLost": acked_not_lost,
    "ConsumerBelowHw": consumer_below_hw,
    "OneLeaderPerEpoch": one_leader_per_epoch,
    "EpochCacheMonotonic": epoch_cache_monotonic,
}


def leader_hw_monotonic(before: State, after: State) -> list[Violation]:
    """LeaderHwMonotonic: a leader's HW never decreases while it leads one epoch."""
    out = []
    for old, new in zip(before.replicas, after.replicas, strict=True):
        same_term = (
            old.online
            and new.online
            and old.role is LEADER
            and new.role is LEADER
            and old.leader_epoch == new.leader_epoch
        )
        if same_term and new.hw < old.hw:
            out.append(Violation("LeaderHwMonotonic", f"{old.id} hw {old.hw} -> {new.hw} in epoch {old.leader_epoch}"))
    return out


def epochs_increase(before: State, after: State) -> list[Violation]:
    """EpochsIncrease: the controller's epoch and each replica's known epoch never go back.
    An unknown epoch (``UNDEFINED_EPOCH``: a ZooKeeper broker restarted into a leaderless
    partition, RESTART-1) is not an epoch and is not compared. The definition over
    observations (SAFE-EPOCHS-INCREASE) also remembers the epoch known before an unknown
    one, so a regression through it (3 -> -1 -> 2) is found there; this form sees two
    states only."""
    out = []
    if after.controller.epoch < before.controller.epoch:
        out.append(
            Violation("EpochsIncrease", f"controller epoch {before.controller.epoch} -> {after.controller.epoch}")
        )
    for old, new in zip(before.replicas, after.replicas, strict=True):
        if new.leader_epoch < old.leader_epoch and new.leader_epoch != UNDEFINED_EPOCH:
            out.append(Violation("EpochsIncrease", f"{old.id} epoch {old.leader_epoch} -> {new.leader_epoch}"))
    return out


TRANSITION_INVARIANTS: dict[str, Callable[[State, State], list[Violation]]] = {
    "LeaderHwMonotonic": leader_hw_monotonic,
    "EpochsIncrease": epochs_increase,
}


def _still_increasing(cache: EpochCache, old: EpochCache) -> bool:
    """EpochCacheMonotonic for ``cache`` given that ``old`` held it: a cache grows by one
    entry per election, so only what differs from ``old`` is walked: from the last entry
    of a prefix the two share (found from their ends, where a cache changes: entries
    appended, dropped, or dropped and replaced by a truncation and a new epoch; the prefix
    comparison is one C-level tuple comparison)."""
    k = len(old)
    if len(cache) <= k and cache == old[: len(cache)]:
        return True  # a prefix of an increasing cache (entries dropped from the end)
    shared = min(k, len(cache))
    while shared and cache[shared - 1] != old[shared - 1]:
        shared -= 1
    start = shared - 1 if shared and cache[:shared] == old[:shared] else 0
    return all(e1 < e2 and o1 < o2 for (e1, o1), (e2, o2) in itertools.pairwise(cache[start:]))


def _holds_since(state: State, before: State) -> bool:
    """True only if every invariant holds in ``state`` and on the step from ``before``,
    given that every state invariant held in ``before`` (``CLEAN`` in its memo); then
    marks ``state`` clean too.

    Looks only at what the step changed: replicas and the controller are immutable, so
    an unchanged one (the same object) keeps every property it had. False means "look
    at everything" (``check`` then lists the violations, if any), never "violated".
    """
    config = state.config
    replicas, old_replicas = state.replicas, before.replicas
    if config is not before.config or len(replicas) != len(old_replicas):
        return False
    if (
        replicas is old_replicas
        and state.controller is before.controller
        and state.committed is before.committed
        and state.consumed is before.consumed
        and state.unclean_elections == before.unclean_elections
        and state.power_failures == before.power_failures
    ):
        # Nothing any invariant reads changed (about half the steps: a tick, a refused
        # produce, a fetch that parks...): all hold, and the memos stay true.
        kept = before.__dict__[MEMO]
        state.__dict__[MEMO] = kept if kept is CLEAN_ONLY else dict(kept)
        return True
    changed: list[str] = []
    leaders = 0
    leader_role = LEADER
    if replicas is old_replicas:  # the step replaced no replica (``Draft.put``)
        if state.controller is not before.controller:
            leaders = sum(1 for r in replicas if r.role is leader_role and r.online)
        old_replicas = ()  # nothing to compare below
    for old, new in zip(old_replicas, replicas, strict=False):  # same length (checked above)
        if new.role is leader_role and new.online:
            leaders += 1
        if new is old:
            continue
        changed.append(new.id)
        leo = new.log.end
        if new.hw > leo or new.checkpoint_hw < 0:  # HwLeLeo
            return False
        if new.leader_epoch < old.leader_epoch and new.leader_epoch != UNDEFINED_EPOCH:  # EpochsIncrease
            return False
        if (  # LeaderHwMonotonic
            new.hw < old.hw
            and old.online
            and new.online
            and old.role is leader_role
            and new.role is leader_role
            and old.leader_epoch == new.leader_epoch
        ):
            return False
        cache = new.epoch_cache
        if cache:  # EpochCacheMonotonic
            if cache[-1][1] > leo:
                return False
            if cache is not old.epoch_cache and not _still_increasing(cache, old.epoch_cache):
                return False
    controller, old_controller = state.controller, before.controller
    if controller is not old_controller:
        if controller.epoch < old_controller.epoch:  # EpochsIncrease
            return False
    elif not changed:
        leaders = 0  # nothing these two read changed: they held in ``before``
    if (leaders > 1 and one_leader_per_epoch(state)) or ((changed or leaders) and strong_isr(state)):
        return False
    # AckedNotLost reads the controller, the leader, the committed records and the two
    # counters: unchanged, they keep the result (and the memo) ``before`` had.
    leader_id = controller.leader
    carry_acked = False
    if leader_id is None:
        pass  # no leader: nothing to lose (acked_not_lost)
    elif (
        state.committed is before.committed
        and controller is old_controller
        and leader_id not in changed
        and state.unclean_elections == before.unclean_elections
        and state.power_failures == before.power_failures
    ):
        carry_acked = True
    elif not state.committed:
        pass  # nothing committed: nothing to lose
    elif _acked_not_lost_incremental(state, before):
        return False
    # ConsumerBelowHw: the same outcome object has the same (no) violations.
    carry_consumer = state.consumed is before.consumed
    if not carry_consumer and _consumer_below_hw_incremental(state, before):
        return False
    before_memo: dict[str, Any] | frozenset[str] = before.__dict__[MEMO]
    fields = state.__dict__
    if isinstance(before_memo, dict) and len(before_memo) > 1:  # more than CLEAN: history memos to carry
        memo = _memo(state)
        memo[CLEAN] = True
        if carry_acked and "AckedNotLost" in before_memo:
            memo["AckedNotLost"] = before_memo["AckedNotLost"]
        if carry_consumer and "ConsumerBelowHw" in before_memo:
            memo["ConsumerBelowHw"] = before_memo["ConsumerBelowHw"]
    elif MEMO in fields:  # the history invariants left results here (or it was checked before)
        if fields[MEMO] is not CLEAN_ONLY:
            fields[MEMO][CLEAN] = True
    else:
        fields[MEMO] = CLEAN_ONLY  # the common case: no dict to build
    return True


CLEAN = "clean"
"""Memo key: every state invariant held in this state (what ``_holds_since`` builds on)."""

CLEAN_ONLY = frozenset({CLEAN})
"""The memo of a clean state that remembers nothing else: shared, never written to
(``_memo`` replaces it by a dict before anything is added)."""


def check(state: State, before: State | None = None, *, incremental: bool = True) -> list[Violation]:
    """All violations in ``state`` (and of the step from ``before`` to it, if given).

    With ``incremental`` (the default) and ``before``, only what changed since
    ``before`` was checked is looked at (``_holds_since``, and the history invariants'
    memos); the result is the same."""
    if incremental and before is not None and CLEAN in before.__dict__.get(MEMO, ()) and _holds_since(state, before):
        return []
    out: list[Violation] = []
    for name, fn in STATE_INVARIANTS.items():
        if name == "AckedNotLost" and before is not None and incremental:
            out += _acked_not_lost_incremental(state, before)
        elif name == "ConsumerBelowHw" and incremental and before is not None:
            out += _consumer_below_hw_incremental(state, before)
        else:
            out += fn(state)
    if not out:
        _memo(state)[CLEAN] = True
    if before is not None:
        for tfn in TRANSITION_INVARIANTS.values():
            out += tfn(before, state)
    return out
