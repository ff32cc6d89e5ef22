"""The ISR a leader knows (PRODUCE-2): the controller's while it leads the controller's
epoch, else the one it had when it last did, until a LeaderAndIsr replaces it.

Kafka's leader checks acks=all, its HW and a waiting produce against its partition's own
ISR (``Partition.inSyncReplicaIds``; trunk ``partitionState.isr``), which it learns only from
its LeaderAndIsr and its own writes. Random runs (the fuzzer's distribution) check that the
reference's ``leader_isr`` keeps exactly that, in every generation.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.search.distribution import DataChooser, configs, draw_steps
from reference_impl import Generation, StepRejected, apply, initial_state
from reference_impl.alter_partition import leader_isr
from reference_impl.state import LEADER


@pytest.mark.parametrize("generation", list(Generation), ids=str)
@settings(max_examples=max(100, settings().max_examples))
@given(data=st.data())
def test_a_leader_behind_the_controller_knows_the_isr_of_the_epoch_it_led(
    generation: Generation, data: st.DataObject
) -> None:
    config = data.draw(configs(generation), label="config")
    chooser = DataChooser(data.draw)
    state = initial_state(config)
    last_led: dict[str, tuple[str, ...]] = {}  # replica -> the ISR at the end of the last step it was current
    told: set[str] = set()  # replicas that applied a LeaderAndIsr since
    for _ in range(data.draw(st.integers(0, 40), label="length")):
        batch = draw_steps(chooser, state)
        if not batch:
            break
        for step in batch:
            before = state
            try:
                state = apply(state, step)
            except StepRejected:
                continue
            for replica in state.replicas:
                if state.is_current_leader(replica):
                    last_led[replica.id] = state.controller.isr
                    told.discard(replica.id)
                    assert leader_isr(state, replica) == state.controller.isr
                    continue
                if replica.leader_epoch != before.replica(replica.id).leader_epoch:
                    told.add(replica.id)
                if not (replica.online and replica.role is LEADER):
                    continue
                known = leader_isr(state, replica)
                assert replica.id in known, (step, known)  # a leader is in the ISR it knows
                if replica.id in last_led and replica.id not in told:
                    assert known == last_led[replica.id], (step, known, last_led[replica.id])
