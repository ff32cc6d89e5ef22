"""ISR-membership members (historical-bugs.md entries 48-56)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from reference_impl import controller, isr, leader_fetch, roles
from reference_impl.draft import Draft
from reference_impl.state import FollowerProgress, Replica, Role, State
from reference_impl.values import evolve

from .base import ALL, EPOCHS, Mutant, Patch, member, on_draft


def _set_caught_up(d: Draft, leader_id: str, follower_id: str, when: int | None) -> None:
    leader = d.replica(leader_id)
    progress = tuple(evolve(p, last_caught_up_ms=when) if p.replica == follower_id else p for p in leader.progress)
    d.put(evolve(leader, progress=progress))


Update = Callable[[Draft, Replica, str, int], None]


def _previous_fetch_rule(change: Callable[[Draft, FollowerProgress, int, int], int | None]) -> Update:
    """``_update_follower_progress`` whose ISR-CAUGHT-UP-2 "caught up as of the previous
    fetch" case (fetch offset below the LEO, at or above the previous fetch's LEO) sets
    ``last_caught_up_ms`` to ``change(d, old progress, fetch offset, leader LEO)``."""
    original = leader_fetch._update_follower_progress

    def update(d: Draft, leader: Replica, follower_id: str, fetch_offset: int) -> None:
        old = leader.follower(follower_id)
        original(d, leader, follower_id, fetch_offset)
        previous = old.last_fetch_leader_leo
        if (
            d.profile.caught_up_from_previous_fetch
            and fetch_offset < leader.leo
            and previous is not None
            and old.last_fetch_ms is not None
            and fetch_offset >= previous
        ):
            _set_caught_up(d, leader.id, follower_id, change(d, old, fetch_offset, leader.leo))

    return update


@member(
    "caught-up-previous-fetch-off-by-one",
    48,
    "off-by-one against Replica.updateFetchState (KAFKA-4485)",
    EPOCHS,
    ("ISR-CAUGHT-UP-2",),
)
class CaughtUpPreviousFetchOffByOne(Mutant):
    """``>`` instead of ``>=`` against the leader's LEO at the previous fetch: a follower
    exactly there is not caught up as of that fetch."""

    def patches(self) -> Iterable[Patch]:
        original = leader_fetch._update_follower_progress

        def update(d: Draft, leader: Replica, follower_id: str, fetch_offset: int) -> None:
            old = leader.follower(follower_id)
            original(d, leader, follower_id, fetch_offset)
            if (
                d.profile.caught_up_from_previous_fetch
                and fetch_offset < leader.leo
                and fetch_offset == old.last_fetch_leader_leo
            ):
                _set_caught_up(d, leader.id, follower_id, old.last_caught_up_ms)

        return [(leader_fetch, "_update_follower_progress", update)]


@member(
    "caught-up-previous-fetch-stamped-now",
    49,
    "misreading of KAFKA-4485 (Replica.updateFetchState)",
    EPOCHS,
    ("ISR-CAUGHT-UP-2",),
)
class CaughtUpPreviousFetchStampedNow(Mutant):
    """A fetch at or past the previous fetch's leader LEO makes the follower caught up
    now, not as of the previous fetch."""

    def patches(self) -> Iterable[Patch]:
        return [
            (leader_fetch, "_update_follower_progress", _previous_fetch_rule(lambda d, old, offset, leo: d.clock_ms))
        ]


@member(
    "caught-up-only-at-log-end-under-epochs",
    50,
    "0.10.1 Replica.updateLogReadResult kept (before KAFKA-4485)",
    EPOCHS,
    ("ISR-CAUGHT-UP-2",),
    profile={"caught_up_from_previous_fetch": False},
)
class CaughtUpOnlyAtLogEndUnderEpochs(Mutant):
    """A follower is caught up only when its fetch reaches the leader's current LEO (the
    0.10 rule), under the epoch generations too."""


@member(
    "isr-shrink-ignores-leo-equality",
    51,
    "0.10 ISR-shrink rule kept (2.x Partition.isFollowerOutOfSync)",
    EPOCHS,
    ("ISR-SHRINK-2",),
    profile={"shrink_spares_follower_at_leo": False},
)
class IsrShrinkIgnoresLeoEquality(Mutant):
    """A follower not caught up for the lag time is dropped from the ISR even when its
    LEO equals the leader's (an idle partition loses its followers)."""


@member(
    "isr-shrink-at-exactly-lag",
    52,
    "off-by-one against (now - lastCaughtUpTimeMs) > replica.lag.time.max.ms",
    ALL,
    ("ISR-SHRINK-1", "ISR-SHRINK-2"),
)
class IsrShrinkAtExactlyLag(Mutant):
    """A follower lagging exactly replica.lag.time.max.ms is dropped (``>=``)."""

    def patches(self) -> Iterable[Patch]:
        original = isr.out_of_sync_from

        def out_of_sync_from(d: Draft, leader: Replica, progress: FollowerProgress) -> int | None:
            since = original(d, leader, progress)
            return None if since is None else since - 1  # now - last > lag, one ms early: >= lag

        return [(isr, "out_of_sync_from", out_of_sync_from)]


def _expand_isr(rule: Callable[[Draft, Replica, int | None], bool | None]) -> Callable[[Draft, str, str], None]:
    """``maybe_expand_isr`` where ``rule(d, leader, follower LEO)`` says: True join now,
    False stay out, None as the reference decides."""
    original = isr.maybe_expand_isr

    def expand(d: Draft, leader_id: str, follower_id: str) -> None:
        leader = d.replica(leader_id)
        if not d.is_current_leader(leader) or follower_id in d.controller.isr:
            original(d, leader_id, follower_id)
            return
        verdict = rule(d, leader, leader.follower(follower_id).remote_leo)
        if verdict is None:
            original(d, leader_id, follower_id)
        elif verdict:
            members = tuple(r for r in d.config.replicas if r in d.controller.isr or r == follower_id)
            d.controller = evolve(d.controller, isr=members)
            d.fire("ISR-EXPAND-1")

    return expand


@member(
    "isr-join-above-hw-only",
    53,
    "off-by-one against Partition.isFollowerInSync (followerEndOffset >= HW)",
    ALL,
    ("ISR-EXPAND-1",),
)
class IsrJoinAboveHwOnly(Mutant):
    """A follower joins the ISR only when its LEO is above the HW (``>``): one level with
    an idle leader never rejoins."""

    def patches(self) -> Iterable[Patch]:
        return [(isr, "maybe_expand_isr", _expand_isr(lambda d, leader, leo: False if leo == leader.hw else None))]


@member("isr-join-without-hw-check", 54, "plausible: ISR-EXPAND-1 dropped", ALL, ("ISR-EXPAND-1",))
class IsrJoinWithoutHwCheck(Mutant):
    """Any follower that fetches joins the ISR, whatever its LEO."""

    def patches(self) -> Iterable[Patch]:
        return [(isr, "maybe_expand_isr", _expand_isr(lambda d, leader, leo: True))]


@member(
    "reelected-leader-forgets-follower-leos",
    55,
    "plausible: Partition.makeLeader resets followers only for a new leader",
    ALL,
    ("LAI-2",),
)
class ReelectedLeaderForgetsFollowerLeos(Mutant):
    """A leader re-elected at a new epoch forgets its followers' LEOs (unknown again)."""

    def patches(self) -> Iterable[Patch]:
        original = roles.become_leader

        def become_leader(d: Draft, replica_id: str, epoch: int, isr: tuple[str, ...]) -> None:
            replica = d.replica(replica_id)
            if replica.role is Role.LEADER:
                d.put(evolve(replica, role=Role.NONE))
            original(d, replica_id, epoch, isr)

        return [(controller, "become_leader", become_leader)]


def _unknown_leos_at_zero(d: Draft, replica_id: str) -> None:
    replica = d.replica(replica_id)
    if replica.role is Role.LEADER:
        progress = tuple(evolve(p, remote_leo=0) if p.remote_leo is None else p for p in replica.progress)
        d.put(evolve(replica, progress=progress))


@member(
    "new-leader-starts-follower-leos-at-zero", 56, "seed 002 §1 misreading (erratum E11)", ALL, ("LAI-2", "HW-LEADER-1")
)
class NewLeaderStartsFollowerLeosAtZero(Mutant):
    """A new leader starts each follower's LEO at 0 instead of unknown (Kafka's -1)."""

    def on_reset(self, state: State) -> State:
        leader = state.controller.leader
        return on_draft(state, lambda d: _unknown_leos_at_zero(d, leader)) if leader is not None else state

    def patches(self) -> Iterable[Patch]:
        original = roles.become_leader

        def become_leader(d: Draft, replica_id: str, epoch: int, isr: tuple[str, ...]) -> None:
            original(d, replica_id, epoch, isr)
            _unknown_leos_at_zero(d, replica_id)

        return [(controller, "become_leader", become_leader)]
