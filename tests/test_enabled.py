"""``enabled_steps`` (from the spec's preconditions) equals trying every candidate.

The trial version below is the definition: a candidate is enabled when the reference
does not reject it. ``enabled_steps`` reads the PRE rules instead; on the states of
random traces (every generation, wild steps included) both give the same list.
"""

from __future__ import annotations

import random

import pytest
from reference_traces import random_config, wild_step

from reference_impl import State, StepRejected, apply, enabled_steps, initial_state
from reference_impl.enabled import candidate_steps
from reference_impl.steps import Step


def enabled_by_trial(state: State) -> list[Step]:
    out = []
    for step in candidate_steps(state):
        try:
            apply(state, step)
        except StepRejected:
            continue
        out.append(step)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_enabled_steps_equal_the_trial_version(seed: int) -> None:
    rng = random.Random(seed)
    states = 0
    for _ in range(60):
        state = initial_state(random_config(rng))
        for _ in range(rng.randint(0, 40)):
            assert enabled_steps(state) == enabled_by_trial(state), state
            states += 1
            choices = enabled_steps(state)
            step = wild_step(rng, state) if rng.random() < 0.3 or not choices else rng.choice(choices)
            try:
                state = apply(state, step)
            except StepRejected:
                continue
    assert states > 500
