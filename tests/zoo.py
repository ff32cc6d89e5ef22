"""A zoo of wrong implementations: the reference with one rule swapped.

Each mutant is a plausible misreading of Kafka (several are the seeds' own). The suite
must fail every one of them; ``test_zoo.py`` checks it does and names the witness fixture.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import reference_impl
from conformance.adapter import StepResult
from conformance.in_process import ReferenceAdapter
from reference_impl import State, fetch_purgatory, isr, replica_ops
from reference_impl.draft import Draft
from reference_impl.state import Role
from reference_impl.values import evolve


def on_draft(state: State, change: Callable[[Draft], None]) -> State:
    """``state`` after ``change`` made on a draft of it (its fired rules kept)."""
    draft = Draft(state)
    draft.fired = list(state.fired)
    change(draft)
    return draft.freeze()


class Mutant(ReferenceAdapter):
    """The reference adapter with ``patch()`` active during each step and ``after()``
    applied to each new state."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name)

    @contextmanager
    def patch(self) -> Iterator[None]:
        yield

    def after(self, before: State, after: State, step: dict[str, Any]) -> State:
        return after

    def step(self, step: dict[str, Any]) -> StepResult:
        before = self._state
        with self.patch():
            result = super().step(step)
        if result.observation is not None and before is not None and self._state is not None:
            self._state = self.after(before, self._state, step)
            result = StepResult(observation=reference_impl.observe(self._state), fired=self._state.fired)
        return result


class FollowerHwWithoutMin(Mutant):
    """HW-FOLLOWER-1 without the min: the follower takes the leader's HW as is."""

    @contextmanager
    def patch(self) -> Iterator[None]:
        with mock.patch.object(reference_impl.hw, "follower_hw", lambda leader_hw, leo: leader_hw):
            yield


class ResponseCarriesUpdatedHw(Mutant):
    """FETCH-LEADER-3 misread: an immediate fetch response carries the HW after the fetch
    moved it (how the seeds tell the second round)."""

    def after(self, before: State, after: State, step: dict[str, Any]) -> State:
        new = [r for r in after.fetch_responses if r not in before.fetch_responses and r.error is None]
        if not new:
            return after
        fixed = tuple(evolve(r, hw=after.replica(r.src).hw) if r in new else r for r in after.fetch_responses)
        return evolve(after, fetch_responses=fixed)


class TruncateToHwOnRestart(Mutant):
    """HW truncation kept under leader epochs: a restarted replica cuts its log at its HW."""

    def after(self, before: State, after: State, step: dict[str, Any]) -> State:
        if step["kind"] != "restart":
            return after
        replica = after.replica(step["replica"])
        return on_draft(after, lambda d: replica_ops.truncate(d, replica.id, replica.hw, rule="TRUNC-HW-1"))


class NoEpochStartCheck(Mutant):
    """KAFKA-7128 missing: a follower joins the ISR as soon as its LEO reaches the HW."""

    @contextmanager
    def patch(self) -> Iterator[None]:
        original = isr.maybe_expand_isr

        def expand(d: Draft, leader_id: str, follower_id: str) -> None:
            lead = d.replica(leader_id)
            leo = lead.follower(follower_id).remote_leo if lead.role is Role.LEADER else None
            if follower_id in d.controller.isr or leo is None or leo < lead.hw:
                original(d, leader_id, follower_id)
                return
            members = tuple(r for r in d.config.replicas if r in d.controller.isr or r == follower_id)
            d.controller = evolve(d.controller, isr=members)

        with mock.patch.object(isr, "maybe_expand_isr", expand):
            yield


class NoPurgatory(Mutant):
    """No fetch purgatory: a fetch with nothing to read is answered at once."""

    def after(self, before: State, after: State, step: dict[str, Any]) -> State:
        new = [p for p in after.parked_fetches if p not in before.parked_fetches]

        def complete(d: Draft) -> None:
            for parked in new:
                fetch_purgatory.complete_parked_fetch(d, parked, "FETCH-PARK-3")

        return on_draft(after, complete) if new else after


ZOO: dict[str, Callable[[], Mutant]] = {
    "follower-hw-without-min": lambda: FollowerHwWithoutMin("follower-hw-without-min"),
    "response-carries-updated-hw": lambda: ResponseCarriesUpdatedHw("response-carries-updated-hw"),
    "truncate-to-hw-on-restart": lambda: TruncateToHwOnRestart("truncate-to-hw-on-restart"),
    "no-epoch-start-check": lambda: NoEpochStartCheck("no-epoch-start-check"),
    "no-purgatory": lambda: NoPurgatory("no-purgatory"),
}
