"""The two states at a failing step, for pictures: the reference's and the implementation's.

A failure record names the first divergent step; reports draw what the reference expected
there beside what the implementation reported (``conformance/reports/diagrams``). The expected
state is the reference's whole observation after that step (a fixture states only part
of it), the observed state is the implementation's observation as it sent it.
"""

from __future__ import annotations

from typing import Any

from reference_impl import StepRejected, apply, observe

from ..fixtures.loading import Fixture


def reference_observation(fixture: Fixture, index: int) -> dict[str, Any]:
    """The reference's observation after step ``index`` of ``fixture`` (rejected steps
    leave the state as it was, as the runner expects of implementations)."""
    state = fixture.start()
    for fs in fixture.steps[: index + 1]:
        try:
            state = apply(state, fs.step)
        except StepRejected:
            continue
    return observe(state)


def step_states(fixture: Fixture, index: int, observed: dict[str, Any] | None) -> dict[str, Any]:
    """``expected_state`` and ``observed_state`` for a failure record (JSON-ready)."""
    return {"expected_state": reference_observation(fixture, index), "observed_state": observed}
