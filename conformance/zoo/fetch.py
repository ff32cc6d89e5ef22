"""Fetch answers and the purgatory (historical-bugs.md entries 10-13)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from reference_impl import State, clock, fetch_purgatory
from reference_impl.draft import Draft
from reference_impl.messages import ParkedFetch
from reference_impl.values import evolve

from .base import ALL, Mutant, Patch, member, on_draft


@member(
    "immediate-response-carries-updated-hw",
    10,
    "Kafka 1.0-2.0: KAFKA-5758, reverted by KAFKA-7104; seeds 000 §2.2, 001 §2.4, 002 §4 (erratum E4)",
    ALL,
    ("FETCH-LEADER-3",),
)
class ImmediateResponseCarriesUpdatedHw(Mutant):
    """An immediate fetch response carries the leader's HW after this fetch moved it,
    not the HW read with the records."""

    def after(self, before: State, after: State, step: dict[str, Any]) -> State:
        new = [r for r in after.fetch_responses if r not in before.fetch_responses and r.error is None]
        if not new:
            return after
        fixed = tuple(evolve(r, hw=after.replica(r.src).hw) if r in new else r for r in after.fetch_responses)
        return evolve(after, fetch_responses=fixed)


@member(
    "no-fetch-purgatory",
    11,
    "plausible: ReplicaManager.fetchMessages without delayedFetchPurgatory",
    ALL,
    ("FETCH-PARK-1",),
)
class NoFetchPurgatory(Mutant):
    """No fetch purgatory: a fetch with nothing to read is answered at once, empty."""

    def after(self, before: State, after: State, step: dict[str, Any]) -> State:
        new = [p for p in after.parked_fetches if p not in before.parked_fetches]

        def complete(d: Draft) -> None:
            for parked in new:
                fetch_purgatory.complete_parked_fetch(d, parked, "FETCH-PARK-3")

        return on_draft(after, complete) if new else after


@member(
    "parked-fetch-answers-arrival-hw",
    12,
    "plausible misreading of DelayedFetch.onComplete",
    ALL,
    ("FETCH-PARK-2", "FETCH-PARK-3"),
)
class ParkedFetchAnswersArrivalHw(Mutant):
    """A parked fetch completes with the HW the leader had when the fetch arrived (the
    response built at arrival), not the HW at completion."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._arrival_hw: dict[ParkedFetch, int] = {}

    def reset(self, config: dict[str, Any], initial: dict[str, Any] | None = None) -> None:
        self._arrival_hw = {}
        super().reset(config, initial)

    def after(self, before: State, after: State, step: dict[str, Any]) -> State:
        for parked in after.parked_fetches:
            if parked not in before.parked_fetches:
                self._arrival_hw[parked] = before.replica(parked.leader).hw
        return after

    def patches(self) -> Iterable[Patch]:
        original = fetch_purgatory.complete_parked_fetch
        arrival = self._arrival_hw

        def complete(d: Draft, parked: ParkedFetch, rule: str) -> None:
            count = len(d.fetch_responses)
            original(d, parked, rule)
            if len(d.fetch_responses) > count and parked in arrival:
                *rest, response = d.fetch_responses
                d.fetch_responses = (*rest, evolve(response, hw=arrival.pop(parked)))

        return [(fetch_purgatory, "complete_parked_fetch", complete), (clock, "complete_parked_fetch", complete)]


@member(
    "hw-change-completes-parked-fetch", 13, "Kafka 2.4.0-2.5.x (KIP-392), removed by KAFKA-9952", ALL, ("FETCH-PARK-2",)
)
class HwChangeCompletesParkedFetch(Mutant):
    """A parked follower fetch completes as soon as the leader's HW is above the HW that
    follower has (KIP-392's "case H"), not only when data arrives or it times out."""

    def after(self, before: State, after: State, step: dict[str, Any]) -> State:
        due = [p for p in after.parked_fetches if after.replica(p.leader).hw > after.replica(p.follower).hw]
        if not due:
            return after

        def complete(d: Draft) -> None:
            for parked in due:
                fetch_purgatory.complete_parked_fetch(d, parked, "FETCH-PARK-2")

        return on_draft(after, complete)
