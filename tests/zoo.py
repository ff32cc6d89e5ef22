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
from reference_impl import State, leader, replica_ops
from reference_impl.state import Role
from reference_impl.values import evolve


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
        return replica_ops.truncate(after, replica.id, replica.hw, rule="TRUNC-HW-1")


class NoEpochStartCheck(Mutant):
    """KAFKA-7128 missing: a follower joins the ISR as soon as its LEO reaches the HW."""

    @contextmanager
    def patch(self) -> Iterator[None]:
        original = leader.maybe_expand_isr

        def expand(state: State, leader_id: str, follower_id: str) -> State:
            lead = state.replica(leader_id)
            leo = lead.follower(follower_id).remote_leo if lead.role is Role.LEADER else None
            if follower_id in state.controller.isr or leo is None or leo < lead.hw:
                return original(state, leader_id, follower_id)
            isr = tuple(r for r in state.config.replicas if r in state.controller.isr or r == follower_id)
            return evolve(state, controller=evolve(state.controller, isr=isr))

        with mock.patch.object(leader, "maybe_expand_isr", expand):
            yield


class NoPurgatory(Mutant):
    """No fetch purgatory: a fetch with nothing to read is answered at once."""

    def after(self, before: State, after: State, step: dict[str, Any]) -> State:
        for parked in [p for p in after.parked_fetches if p not in before.parked_fetches]:
            after = leader.complete_parked_fetch(after, parked, "FETCH-PARK-3")
        return after


ZOO: dict[str, Callable[[], Mutant]] = {
    "follower-hw-without-min": lambda: FollowerHwWithoutMin("follower-hw-without-min"),
    "response-carries-updated-hw": lambda: ResponseCarriesUpdatedHw("response-carries-updated-hw"),
    "truncate-to-hw-on-restart": lambda: TruncateToHwOnRestart("truncate-to-hw-on-restart"),
    "no-epoch-start-check": lambda: NoEpochStartCheck("no-epoch-start-check"),
    "no-purgatory": lambda: NoPurgatory("no-purgatory"),
}
