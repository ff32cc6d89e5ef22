"""One test per spec rule (spec/replication.md), each on the smallest state that shows it.

Fixtures show the rules in the seeds' stories; these tests pin each rule alone, with the
``fired`` list proving which rule acted.
"""

from __future__ import annotations

import pytest
from helpers import run_steps

from reference_impl import Config, Generation, State, StepRejected, apply, observe, step_from_dict
from reference_impl.epoch_cache import assign, end_offset_for, truncate_from_end
from reference_impl.truncation import offset_truncation

HT, LE, DE = Generation.HW_TRUNCATION, Generation.LEADER_EPOCH, Generation.DIVERGING_EPOCH


def cfg(gen: Generation = LE, replicas: tuple[str, ...] = ("A", "B"), **kw: object) -> Config:
    return Config(replicas=replicas, generation=gen, **kw)  # type: ignore[arg-type]


def step(state, **do):  # type: ignore[no-untyped-def]
    return apply(state, step_from_dict(do))


def rejected(state, **do) -> StepRejected:  # type: ignore[no-untyped-def]
    with pytest.raises(StepRejected) as info:
        step(state, **do)
    return info.value


def rep(state, name):  # type: ignore[no-untyped-def]
    return observe(state)["replicas"][name]


P = {"kind": "produce", "values": ["m"], "acks": "1"}


def fetch(r: str) -> dict[str, str]:
    return {"kind": "fetch", "replica": r}


def fround(r: str) -> dict[str, str]:
    return {"kind": "fetch_round", "replica": r}


# --- high watermark ----------------------------------------------------------------


def test_HW_LEADER_1_max_of_current_and_min_of_counted_leos() -> None:
    s = run_steps(cfg(), P, fround("B"), fetch("B"))
    assert rep(s, "A")["hw"] == 1 and "HW-LEADER-1" in s.fired


def test_HW_LEADER_1_unknown_remote_leo_holds_the_hw() -> None:
    s = run_steps(cfg(), P)
    assert rep(s, "A")["remote_leo"] == {"B": None} and rep(s, "A")["hw"] == 0


def test_HW_LEADER_2_caught_up_follower_outside_isr_counts_in_every_generation() -> None:
    # B is out of the ISR; its fetch at offset 1 catches up to the LEO the leader had at
    # B's previous fetch, so it counts for the HW for the lag time (holding the HW at 2
    # while the leader has 3): KAFKA-4485, 0.10.2.0, so HT as well as LE. Counting the
    # ISR only (0.10.1) would give 3.
    def hw_after(gen: Generation) -> int:
        s = run_steps(
            cfg(gen, replica_lag_time_max_ms=1000), P, {"kind": "tick", "ms": 1500}, fround("B"), P, fround("B"), P
        )
        assert s.controller.isr == ("A",) and rep(s, "A")["leo"] == 3
        return int(rep(s, "A")["hw"])

    assert hw_after(HT) == 2
    assert hw_after(LE) == 2


def test_HW_LEADER_4_a_follower_counts_only_with_a_fetch_from_its_current_incarnation() -> None:
    # DE: B fetched (broker epoch 0) and is caught up; it dies, leaves the ISR and restarts
    # (incarnation 1) without fetching: A's next append does not wait for it. Its next fetch
    # records incarnation 1. A new leader starts with no broker epoch for anyone.
    s = run_steps(cfg(DE), P, fround("B"), fround("B"), {"kind": "crash", "replica": "B"}, {"kind": "elect"})
    assert s.replica("A").follower("B").broker_epoch == 0
    s = step(step(s, kind="restart", replica="B"), **P)
    assert s.replica("B").incarnation == 1 and s.controller.isr == ("A",)
    assert rep(s, "A")["hw"] == 2 and "HW-LEADER-4" in s.fired
    s = step(s, **fetch("B"))
    assert s.replica("A").follower("B").broker_epoch == 1
    s = step(s, **P)
    assert rep(s, "A")["hw"] == 2 and "HW-LEADER-4" not in s.fired
    fresh = run_steps(cfg(DE))
    assert all(p.broker_epoch is None for p in fresh.replica("A").progress)


def test_HW_FOLLOWER_1_min_of_response_hw_and_own_leo() -> None:
    s = run_steps(
        cfg(), P, fround("B"), fetch("B"), {"kind": "tick", "ms": 500}, {"kind": "deliver_fetch", "replica": "B"}
    )
    assert rep(s, "B")["hw"] == 1 and "HW-FOLLOWER-1" in s.fired


# --- produce -------------------------------------------------------------------------


def test_PRODUCE_PRE_1_ids_are_unique() -> None:
    s = run_steps(cfg(), {**P, "id": "x"})
    assert rejected(s, **{**P, "id": "x"}).rule == "PRODUCE-PRE-1"


def test_PRODUCE_1_no_live_leader() -> None:
    s = run_steps(cfg(), {"kind": "crash", "replica": "A"}, {**P, "id": "p"})
    assert observe(s)["producer"]["p"] == "NETWORK_EXCEPTION"
    s = run_steps(cfg(), {**P, "id": "p", "to": "B"})
    assert observe(s)["producer"]["p"] == "NOT_LEADER_OR_FOLLOWER"


def test_PRODUCE_2_not_enough_replicas_before_append() -> None:
    s = run_steps(cfg(min_insync_replicas=2, replica_lag_time_max_ms=1000), P, {"kind": "tick", "ms": 1500})
    s = step(s, kind="produce", values=["x"], acks="all", id="q")
    assert observe(s)["producer"]["q"] == "NOT_ENOUGH_REPLICAS" and rep(s, "A")["leo"] == 1


def test_PRODUCE_3_records_carry_the_leader_epoch() -> None:
    s = run_steps(cfg(), {"kind": "elect", "leader": "A"}, P)
    assert rep(s, "A")["log"] == ["m@1"]


def test_PRODUCE_4_acks_0_and_1() -> None:
    s = run_steps(cfg(), {**P, "id": "one"}, {**P, "acks": "0", "id": "zero"})
    assert observe(s)["producer"] == {"one": "acked", "zero": "sent"}


def test_PRODUCE_5_acks_all_waits_for_the_hw() -> None:
    s = run_steps(cfg(), {**P, "acks": "all", "id": "p"}, fround("B"))
    assert observe(s)["producer"]["p"] == "pending"
    s = step(s, **fetch("B"))
    assert observe(s)["producer"]["p"] == "acked"


def test_PRODUCE_6_waiting_produce_fails_when_leader_crashes() -> None:
    s = run_steps(cfg(), {**P, "acks": "all", "id": "p"}, {"kind": "crash", "replica": "A"})
    assert observe(s)["producer"]["p"] == "NETWORK_EXCEPTION" and "PRODUCE-6" in s.fired


def test_PRODUCE_7_waiting_produce_times_out_and_the_record_stays() -> None:
    s = run_steps(cfg(request_timeout_ms=1000), {**P, "acks": "all", "id": "p"}, {"kind": "tick", "ms": 1000})
    assert observe(s)["producer"]["p"] == "REQUEST_TIMED_OUT" and rep(s, "A")["leo"] == 1


# --- fetch ---------------------------------------------------------------------------


def test_FETCH_PRE_1_one_fetch_outstanding_and_not_while_truncating() -> None:
    s = run_steps(cfg(), fetch("B"))
    assert rejected(s, **fetch("B")).rule == "FETCH-PRE-1"
    s = run_steps(cfg(), {"kind": "elect", "leader": "A"})
    assert "truncate first" in rejected(s, **fetch("B")).reason
    assert rejected(run_steps(cfg()), **fetch("A")).rule == "FETCH-PRE-1"  # the leader


def test_FETCH_ROUND_1_leaves_a_parked_fetch_open() -> None:
    s = run_steps(cfg(), fround("B"))
    assert len(s.parked_fetches) == 1 and not s.fetch_responses


def test_FETCH_DELIVER_PRE_1_needs_a_response() -> None:
    assert rejected(run_steps(cfg()), kind="deliver_fetch", replica="B").rule == "FETCH-DELIVER-PRE-1"


def test_FETCH_LEADER_3_immediate_response_carries_the_hw_before_the_update() -> None:
    s = run_steps(
        cfg(), P, fround("B"), fetch("B"), {"kind": "tick", "ms": 500}, {"kind": "deliver_fetch", "replica": "B"}
    )
    s = step(s, kind="produce", values=["n"], acks="1")
    s = step(s, **fetch("B"))  # offset 1: reads n; moves the HW to 1 only after reading
    assert observe(s)["in_flight"]["fetch_responses"] == ["A->B FetchResponse(epoch=0 offset=1 records=[n@0] hw=1)"]
    s = step(s, kind="deliver_fetch", replica="B")
    s = step(s, **fetch("B"))  # offset 2 moves the HW to 2, parked: reads HW at completion
    s = step(s, kind="produce", values=["o"], acks="1")
    assert observe(s)["in_flight"]["fetch_responses"] == ["A->B FetchResponse(epoch=0 offset=2 records=[o@0] hw=2)"]


def test_FETCH_LEADER_1_fencing_only_in_epoch_generations() -> None:
    for gen, error in ((LE, "FENCED_LEADER_EPOCH"), (HT, None)):
        s = run_steps(cfg(gen, ("A", "B", "C")), {"kind": "elect", "leader": "A", "notify": ["A"]}, fetch("B"))
        responses = observe(s)["in_flight"]["fetch_responses"]
        if error:
            assert responses == [f"A->B FetchResponse(epoch=0 offset=0 error={error})"]
        else:
            assert responses == [] and len(s.parked_fetches) == 1


# B leads epoch 1 and writes m at offset 1 that nobody copies; then C leads epoch 2.
B_DIVERGES = (
    P,
    fround("B"),
    fround("C"),
    {"kind": "elect", "leader": "B"},
    P,
    {"kind": "elect", "leader": "C"},
)


def test_FETCH_LEADER_2_diverging_epoch_and_no_progress_update() -> None:
    s = run_steps(cfg(DE, ("A", "B", "C")), *B_DIVERGES, fetch("B"))
    assert observe(s)["in_flight"]["fetch_responses"] == ["C->B FetchResponse(epoch=2 offset=2 diverging=(0,1) hw=0)"]
    assert rep(s, "C")["remote_leo"]["B"] is None


# A has m (HW 1); B lost it in a power failure and leads epoch 1 with an empty log; A is back.
LEADER_BEHIND = (
    P,
    fround("B"),
    fetch("B"),
    {"kind": "tick", "ms": 500},
    {"kind": "deliver_fetch", "replica": "B"},
    {"kind": "crash", "replica": "A"},
    {"kind": "crash", "replica": "B", "unflushed_from": 0},
    {"kind": "restart", "replica": "B"},
    {"kind": "elect"},
    {"kind": "restart", "replica": "A"},
)


def test_FETCH_LEADER_4_offset_out_of_range() -> None:
    # A follower whose log outgrew the leader's (hw-truncation keeps it: HW truncation
    # stops at its own HW).
    s = run_steps(
        cfg(HT, unclean_leader_election=True, replica_high_watermark_checkpoint_interval_ms=0),
        *LEADER_BEHIND,
        fetch("A"),
    )
    assert observe(s)["in_flight"]["fetch_responses"] == [
        "B->A FetchResponse(epoch=1 offset=1 error=OFFSET_OUT_OF_RANGE leader_leo=0)"
    ]
    s = step(s, kind="deliver_fetch", replica="A")
    assert rep(s, "A")["leo"] == 0 and "FOLLOWER-OOR-1" in s.fired


def test_FETCH_LEADER_5_progress_after_each_fetch() -> None:
    s = run_steps(cfg(), {"kind": "tick", "ms": 7}, P, fround("B"))
    progress = s.replica("A").follower("B")
    assert (progress.remote_leo, progress.last_fetch_leader_leo, progress.last_fetch_ms) == (0, 1, 7)


def test_FETCH_PARK_1_parks_until_wait_max() -> None:
    s = run_steps(cfg(replica_fetch_wait_max_ms=123), {"kind": "tick", "ms": 10}, fetch("B"))
    assert s.parked_fetches[0].deadline_ms == 133


def test_FETCH_PARK_2_append_wakes_parked_fetch() -> None:
    s = run_steps(cfg(), fetch("B"), P)
    assert not s.parked_fetches and "FETCH-PARK-2" in s.fired


def test_FETCH_PARK_2_hw_change_alone_does_not_wake_a_parked_fetch() -> None:
    s = run_steps(cfg(LE, ("A", "B", "C")), P, fround("B"), fround("C"), fetch("B"), fetch("C"))
    assert rep(s, "A")["hw"] == 1 and len(s.parked_fetches) == 2


def test_FETCH_PARK_3_expiry_reads_hw_at_completion() -> None:
    s = run_steps(cfg(), P, fround("B"), fetch("B"), {"kind": "tick", "ms": 500})
    assert observe(s)["in_flight"]["fetch_responses"] == ["A->B FetchResponse(epoch=0 offset=1 records=[] hw=1)"]


def test_FETCH_PARK_4_parked_fetches_at_a_crashed_leader_vanish() -> None:
    s = run_steps(cfg(), fetch("B"), {"kind": "crash", "replica": "A"})
    assert not s.parked_fetches and not s.fetch_responses


def test_MSG_DROP_1_answers_to_an_old_incarnation_are_dropped() -> None:
    s = run_steps(cfg(), fetch("B"), {"kind": "crash", "replica": "B"}, {"kind": "restart", "replica": "B"})
    s = step(s, kind="epoch_round", replica="B")
    s = step(s, **P)  # completes B's pre-crash parked fetch: nobody is listening
    assert "MSG-DROP-1" in s.fired and not s.fetch_responses


def test_FOLLOWER_FETCH_2_follower_caches_new_epochs() -> None:
    s = run_steps(cfg(), P, {"kind": "elect", "leader": "A"}, {"kind": "epoch_round", "replica": "B"}, P, fround("B"))
    assert rep(s, "B")["epoch_cache"] == [[0, 0], [1, 1]]


def test_FOLLOWER_FETCH_3_error_changes_nothing() -> None:
    s = run_steps(cfg(LE, ("A", "B", "C")), {"kind": "elect", "leader": "A", "notify": ["A"]}, fround("B"))
    assert "FOLLOWER-FETCH-3" in s.fired and rep(s, "B")["leo"] == 0


def test_FOLLOWER_OOR_2_hw_truncation_halts_when_unclean_is_disabled() -> None:
    s = run_steps(
        cfg(HT, replica_high_watermark_checkpoint_interval_ms=0),
        *LEADER_BEHIND,
        fround("A"),
    )
    assert rep(s, "A")["online"] is False and "FOLLOWER-OOR-2" in s.fired


def test_FOLLOWER_DIVERGE_1_truncates_from_the_diverging_epoch() -> None:
    s = run_steps(cfg(DE, ("A", "B", "C")), *B_DIVERGES, fround("B"))
    assert rep(s, "B")["log"] == ["m@0"] and "FOLLOWER-DIVERGE-1" in s.fired


# --- OffsetsForLeaderEpoch -------------------------------------------------------------


def test_EPOCH_PRE_1_only_under_leader_epoch_and_when_truncating() -> None:
    assert rejected(run_steps(cfg(DE)), kind="epoch_request", replica="B").rule == "EPOCH-PRE-1"
    assert "not truncating" in rejected(run_steps(cfg()), kind="epoch_request", replica="B").reason


def test_EPOCH_ROUND_1_and_EPOCH_DELIVER_PRE_1() -> None:
    s = run_steps(cfg(), {"kind": "elect", "leader": "A"}, {"kind": "epoch_round", "replica": "B"})
    assert rep(s, "B")["fetch_state"] == "fetching"
    assert rejected(s, kind="deliver_epoch", replica="B").rule == "EPOCH-DELIVER-PRE-1"


def test_EPOCH_PRE_2_a_follower_without_an_epoch_asks_nobody() -> None:
    """An empty follower at an older epoch than its leader: no request reaches the leader, so
    nothing is fenced; its own outcome (-1, -1) truncates it to its HW and it fetches."""
    s = run_steps(
        cfg(LE, ("A", "B", "C")),
        {"kind": "elect", "leader": "B", "notify": ["B"]},
        {"kind": "deliver_leader_and_isr", "replica": "C"},
        {"kind": "elect", "leader": "B", "notify": ["B"]},
        {"kind": "epoch_request", "replica": "C"},
    )
    assert rep(s, "C")["leader_epoch"] == 1 and rep(s, "B")["leader_epoch"] == 2
    assert "EPOCH-PRE-2" in s.fired and not any(rule.startswith("EPOCH-LEADER") for rule in s.fired)
    assert observe(s)["in_flight"]["epoch_responses"] == [
        "B->C OffsetsForLeaderEpochResponse(requested=None epoch=-1 end_offset=-1)"
    ]
    s = step(s, kind="deliver_epoch", replica="C")
    assert rep(s, "C")["fetch_state"] == "fetching" and "TRUNC-EPOCH-1" in s.fired


def test_EPOCH_LEADER_1_unknown_epoch() -> None:
    s = run_steps(
        cfg(LE, ("A", "B", "C")),
        P,
        fround("C"),
        {"kind": "elect", "leader": "B", "notify": ["C"]},
        {"kind": "epoch_request", "replica": "C"},
    )
    assert observe(s)["in_flight"]["epoch_responses"] == [
        "B->C OffsetsForLeaderEpochResponse(requested=0 error=UNKNOWN_LEADER_EPOCH)"
    ]


def test_EPOCH_LEADER_2_answer_from_the_cache() -> None:
    s = run_steps(cfg(), P, fround("B"), {"kind": "elect", "leader": "A"}, {"kind": "epoch_request", "replica": "B"})
    assert observe(s)["in_flight"]["epoch_responses"] == [
        "A->B OffsetsForLeaderEpochResponse(requested=0 epoch=0 end_offset=1)"
    ]


def test_EPOCH_FOLLOWER_1_error_keeps_truncating() -> None:
    s = run_steps(
        cfg(LE, ("A", "B", "C")),
        P,
        fround("C"),
        {"kind": "elect", "leader": "B", "notify": ["C"]},
        {"kind": "epoch_round", "replica": "C"},
    )
    assert rep(s, "C")["fetch_state"] == "truncating" and "EPOCH-FOLLOWER-1" in s.fired


def test_EPOCH_FOLLOWER_2_truncates_and_starts_fetching() -> None:
    s = run_steps(cfg(), P, fround("B"), {"kind": "elect", "leader": "A"}, {"kind": "epoch_round", "replica": "B"})
    assert rep(s, "B")["fetch_state"] == "fetching" and "EPOCH-FOLLOWER-2" in s.fired


# --- truncation and the epoch cache ---------------------------------------------------


def test_TRUNC_1_log_cache_and_hw_follow_the_cut() -> None:
    s = run_steps(
        cfg(), P, P, fround("B"), fetch("B"), {"kind": "tick", "ms": 500}, {"kind": "deliver_fetch", "replica": "B"}
    )
    s = step(s, kind="crash", replica="B", unflushed_from=1)
    assert rep(s, "B")["log"] == ["m@0"] and rep(s, "B")["hw"] == 1 and "TRUNC-1" in s.fired


def test_TRUNC_HW_1_only_under_hw_truncation_and_only_on_a_new_leader() -> None:
    base = (P, fround("B"), {"kind": "crash", "replica": "B"}, {"kind": "restart", "replica": "B"})
    assert rep(run_steps(cfg(HT), *base), "B")["leo"] == 0
    assert rep(run_steps(cfg(LE), *base), "B")["leo"] == 1
    s = run_steps(cfg(HT), P, fround("B"), {"kind": "elect", "leader": "A"})  # same leader, new epoch
    assert rep(s, "B")["leo"] == 1


def test_TRUNC_EPOCH_1_undefined_answer_truncates_to_hw() -> None:
    plan = offset_truncation(-1, -1, ((0, 0),), follower_leo=5, follower_hw=3)
    assert (plan.offset, plan.completed, plan.rule) == (3, True, "TRUNC-EPOCH-1")


def test_TRUNC_EPOCH_2_known_epoch() -> None:
    plan = offset_truncation(0, 4, ((0, 0), (2, 5)), follower_leo=7, follower_hw=0)
    assert (plan.offset, plan.completed, plan.rule) == (4, True, "TRUNC-EPOCH-2")


def test_TRUNC_EPOCH_3_unknown_epoch_asks_again() -> None:
    plan = offset_truncation(1, 6, ((0, 0), (2, 5)), follower_leo=7, follower_hw=0)
    assert (plan.offset, plan.completed, plan.rule) == (5, False, "TRUNC-EPOCH-3")


def test_TRUNC_EPOCH_4_no_epoch_at_or_below_the_answer() -> None:
    plan = offset_truncation(1, 2, (), follower_leo=7, follower_hw=0)
    assert (plan.offset, plan.completed, plan.rule) == (2, True, "TRUNC-EPOCH-4")


def test_EPOCH_CACHE_1_assign() -> None:
    assert assign((), 0, 0) == ((0, 0),)
    assert assign(((0, 0),), 0, 5) == ((0, 0),)
    assert assign(((0, 0), (1, 5)), 2, 5) == ((0, 0), (2, 5))
    assert assign(((0, 0), (3, 5)), 2, 7) == ((0, 0), (2, 7))


def test_EPOCH_CACHE_2_truncate_from_end() -> None:
    assert truncate_from_end(((0, 0), (1, 5), (2, 9)), 5) == ((0, 0),)


def test_EPOCH_CACHE_3_end_offset_for() -> None:
    cache = ((0, 0), (1, 100))
    assert end_offset_for(cache, 0, 120) == (0, 100)
    assert end_offset_for(cache, 1, 120) == (1, 120)
    assert end_offset_for(cache, 5, 120) == (-1, -1)
    assert end_offset_for(((2, 10), (4, 20)), 1, 30) == (1, 10)
    assert end_offset_for(((0, 0), (2, 10), (4, 20)), 3, 30) == (2, 20)
    assert end_offset_for(cache, None, 120) == (-1, -1)


# --- ISR ---------------------------------------------------------------------------


def test_ISR_CAUGHT_UP_1_only_at_the_log_end() -> None:
    s = run_steps(cfg(HT), {"kind": "tick", "ms": 5}, P, fround("B"))
    assert s.replica("A").follower("B").last_caught_up_ms == 0
    s = step(s, **fetch("B"))
    assert s.replica("A").follower("B").last_caught_up_ms == 5


def test_ISR_CAUGHT_UP_2_as_of_the_previous_fetch() -> None:
    s = run_steps(cfg(LE), {"kind": "tick", "ms": 5}, fround("B"), {"kind": "tick", "ms": 495})
    s = run_steps(
        cfg(LE),
        {"kind": "tick", "ms": 5},
        fetch("B"),
        {"kind": "tick", "ms": 500},
        {"kind": "deliver_fetch", "replica": "B"},
    )
    s = step(s, **P)
    s = step(s, **fetch("B"))  # offset 0 < LEO 1, but >= LEO at the previous fetch (0, at 5)
    assert s.replica("A").follower("B").last_caught_up_ms == 5


def test_ISR_SHRINK_1_time_only() -> None:
    s = run_steps(cfg(HT, replica_lag_time_max_ms=1000), {"kind": "tick", "ms": 1500})
    assert s.controller.isr == ("A",)


def test_ISR_SHRINK_2_not_while_the_leo_matches() -> None:
    s = run_steps(cfg(LE, replica_lag_time_max_ms=1000), {"kind": "tick", "ms": 1500})
    assert s.controller.isr == ("A",)  # never fetched: remote LEO unknown (-1) != 0
    s = run_steps(cfg(LE, replica_lag_time_max_ms=1000), fround("B"), {"kind": "tick", "ms": 5000})
    assert s.controller.isr == ("A", "B")


def test_ISR_SHRINK_runs_every_half_lag_from_broker_start() -> None:
    s = run_steps(cfg(LE, replica_lag_time_max_ms=1000), P, {"kind": "tick", "ms": 1000})
    assert s.controller.isr == ("A", "B")
    s = step(s, kind="tick", ms=499)
    assert s.controller.isr == ("A", "B")
    s = step(s, kind="tick", ms=1)
    assert s.controller.isr == ("A",) and s.clock_ms == 1500


def test_ISR_EXPAND_1_and_2() -> None:
    s = run_steps(cfg(LE, replica_lag_time_max_ms=1000), P, {"kind": "tick", "ms": 1500}, fround("B"))
    assert s.controller.isr == ("A",)
    s = step(s, **fetch("B"))
    assert s.controller.isr == ("A", "B") and {"ISR-EXPAND-1", "ISR-EXPAND-2"} <= set(s.fired)


# --- controller ----------------------------------------------------------------------


def test_CTRL_ELECT_PRE_1_leader_alive() -> None:
    assert rejected(run_steps(cfg()), kind="elect").rule == "CTRL-ELECT-PRE-1"


def test_CTRL_ELECT_1_first_live_isr_member() -> None:
    s = run_steps(
        cfg(LE, ("A", "B", "C")),
        {"kind": "crash", "replica": "A"},
        {"kind": "crash", "replica": "B"},
        {"kind": "elect"},
    )
    assert (s.controller.leader, s.controller.isr) == ("C", ("C",))


def test_CTRL_ELECT_2_and_3_unclean_only_when_enabled() -> None:
    steps = ({"kind": "tick", "ms": 1500}, {"kind": "crash", "replica": "A"}, {"kind": "elect"})
    s = run_steps(cfg(replica_lag_time_max_ms=1000), *steps)
    assert s.controller.leader is None and "CTRL-ELECT-3" in s.fired
    s = run_steps(cfg(replica_lag_time_max_ms=1000, unclean_leader_election=True), *steps)
    assert s.controller.leader == "B" and s.unclean_elections == 1


def test_CTRL_ELECT_4_controlled_election_needs_a_live_isr_member() -> None:
    s = run_steps(cfg(replica_lag_time_max_ms=1000), {"kind": "tick", "ms": 1500})
    assert rejected(s, kind="elect", leader="B").rule == "CTRL-ELECT-4"


def test_CTRL_ELECT_5_epoch_plus_one_and_notify() -> None:
    s = run_steps(cfg(LE, ("A", "B", "C")), {"kind": "elect", "leader": "B", "notify": ["B"]})
    assert s.controller.epoch == 1 and [m.dst for m in s.leader_and_isr] == ["A", "C"]


def test_LAI_PRE_1_and_LAI_1_stale_leader_and_isr_is_ignored() -> None:
    from reference_impl.messages import LeaderAndIsr
    from reference_impl.values import evolve

    assert rejected(run_steps(cfg()), kind="deliver_leader_and_isr", replica="B").rule == "LAI-PRE-1"
    # No step sequence leaves an older LeaderAndIsr in flight behind a newer one (LAI-5):
    # build that state (a deposed controller's request, in Kafka) to check the guard.
    s = run_steps(cfg(), {"kind": "elect", "leader": "A"}, {"kind": "elect", "leader": "A"})
    stale = LeaderAndIsr(dst="B", leader="B", epoch=1, isr=("A", "B"))
    s = step(evolve(s, leader_and_isr=(stale,)), kind="deliver_leader_and_isr", replica="B")
    assert rep(s, "B")["leader_epoch"] == 2 and rep(s, "B")["role"] == "follower" and "LAI-1" in s.fired


def test_LAI_5_a_notified_broker_first_applies_what_is_in_flight_to_it() -> None:
    s = run_steps(cfg(), {"kind": "elect", "leader": "B", "notify": ["B"]})
    assert rep(s, "A")["role"] == "leader" and rep(s, "A")["leader_epoch"] == 0
    s = step(s, kind="elect", leader="A")  # epoch 2 to everyone: A gets epoch 1 first
    assert "LAI-5" in s.fired and s.leader_and_isr == ()
    assert rep(s, "A")["role"] == "leader" and rep(s, "A")["leader_epoch"] == 2
    assert rep(s, "A")["remote_leo"] == {"B": None}  # demoted in between: a new leader (LAI-2)


def test_LAI_2_new_leader_caches_its_epoch_and_resets_progress() -> None:
    s = run_steps(cfg(), P, fround("B"), {"kind": "crash", "replica": "A"}, {"kind": "elect"})
    assert rep(s, "B")["epoch_cache"] == [[0, 0], [1, 1]] and rep(s, "B")["remote_leo"] == {"A": None}


def test_LAI_3_follower_state_per_generation() -> None:
    for gen, state in ((LE, "truncating"), (DE, "fetching"), (HT, "fetching")):
        s = run_steps(cfg(gen), {"kind": "elect", "leader": "A"})
        assert rep(s, "B")["fetch_state"] == state, gen


# --- broker life, time, consumers ----------------------------------------------------


def test_CRASH_PRE_1_and_CRASH_1() -> None:
    s = run_steps(cfg(), {"kind": "crash", "replica": "B"})
    assert rejected(s, kind="crash", replica="B").rule == "CRASH-PRE-1"
    assert rejected(run_steps(cfg()), kind="crash", replica="B", unflushed_from=3).rule == "CRASH-PRE-1"


def test_CRASH_2_power_failure_loses_unflushed_records() -> None:
    s = run_steps(cfg(), P, P, {"kind": "crash", "replica": "A", "unflushed_from": 1})
    assert rep(s, "A")["leo"] == 1 and s.power_failures == 1


def test_RESTART_PRE_1_and_RESTART_1() -> None:
    assert rejected(run_steps(cfg()), kind="restart", replica="B").rule == "RESTART-PRE-1"
    s = run_steps(cfg(replica_high_watermark_checkpoint_interval_ms=0), P, fround("B"), fetch("B"))
    s = run_steps(
        cfg(replica_high_watermark_checkpoint_interval_ms=0),
        P,
        fround("B"),
        fetch("B"),
        {"kind": "crash", "replica": "A"},
        {"kind": "elect"},
        {"kind": "restart", "replica": "A"},
    )
    assert rep(s, "A")["hw"] == 1 and rep(s, "A")["role"] == "follower"


def _leaderless(gen: Generation) -> State:
    """A leads, B left the ISR, A died: the controller wrote leader none at epoch 1."""
    steps: list[dict[str, object]] = [P, {"kind": "tick", "ms": 1001}, {"kind": "isr_expiration", "replica": "A"}]
    if gen is DE:
        steps.append({"kind": "deliver_alter_partition", "replica": "A"})
    s = run_steps(cfg(gen, replica_lag_time_max_ms=1000), *steps, {"kind": "crash", "replica": "A"}, {"kind": "elect"})
    assert observe(s)["leader"] is None and observe(s)["leader_epoch"] == 1 and "LAI-4" in s.fired
    return s


@pytest.mark.parametrize("gen", [HT, LE])
def test_LAI_4_zookeeper_ignores_no_leader_and_RESTART_1_knows_no_epoch(gen: Generation) -> None:
    s = _leaderless(gen)
    b = rep(s, "B")
    assert (b["role"], b["leader"], b["leader_epoch"]) == ("follower", "A", 0)
    s = step(s, kind="restart", replica="A")
    a = rep(s, "A")
    assert (a["role"], a["leader"], a["leader_epoch"]) == ("none", None, -1)
    s = step(s, kind="elect")
    assert rep(s, "B")["leader_epoch"] == 2 and rep(s, "A")["role"] == "leader"
    assert "TRUNC-HW-1" not in s.fired  # HT: the same leader, A, is no leader change for B


def test_LAI_4_kraft_stops_fetching_and_RESTART_1_knows_the_epoch() -> None:
    s = _leaderless(DE)
    b = rep(s, "B")
    assert (b["role"], b["leader"], b["leader_epoch"]) == ("none", None, 1)
    a = rep(step(s, kind="restart", replica="A"), "A")
    assert (a["role"], a["leader"], a["leader_epoch"]) == ("none", None, 1)


def test_RESTART_2_the_controller_handles_a_bounced_leader_first() -> None:
    s = run_steps(cfg(), P, fround("B"), fetch("B"), {"kind": "crash", "replica": "A"})
    s = step(s, kind="restart", replica="A")
    assert "RESTART-2" in s.fired and "CTRL-ELECT-1" in s.fired
    assert observe(s)["leader"] == "B" and rep(s, "A")["role"] == "follower" and rep(s, "A")["leader"] == "B"
    # a follower restarting before the controller noticed: an outage it never saw
    s = run_steps(cfg(), {"kind": "crash", "replica": "B"}, {"kind": "restart", "replica": "B"})
    assert "RESTART-2" not in s.fired and observe(s)["isr"] == ["A", "B"] and observe(s)["leader_epoch"] == 0


def test_CKPT_1_and_CKPT_2() -> None:
    s = run_steps(cfg(replica_high_watermark_checkpoint_interval_ms=0), P, fround("B"), fetch("B"))
    assert rep(s, "A")["checkpoint_hw"] == 1
    s = run_steps(cfg(), P, fround("B"), fetch("B"), {"kind": "tick", "ms": 4999})
    assert rep(s, "A")["checkpoint_hw"] == 0
    s = step(s, kind="tick", ms=1)
    assert rep(s, "A")["checkpoint_hw"] == 1 and "CKPT-2" in s.fired


def test_TICK_1_same_millisecond_order() -> None:
    # at 1000 the parked fetch expires before the ISR check moves the HW
    s = run_steps(
        cfg(LE, ("A", "B", "C"), replica_lag_time_max_ms=1000, replica_fetch_wait_max_ms=1000),
        P,
        fround("B"),
        fetch("B"),
    )
    s = step(s, kind="tick", ms=1500)
    assert rep(s, "A")["hw"] == 1
    assert observe(s)["in_flight"]["fetch_responses"] == ["A->B FetchResponse(epoch=0 offset=1 records=[] hw=0)"]


def test_STEP_PRE_1_unknown_replica() -> None:
    assert rejected(run_steps(cfg()), kind="fetch", replica="Z").rule == "STEP-PRE-1"


def test_CONSUME_1_and_2() -> None:
    s = run_steps(cfg(), P, P, fround("B"), fetch("B"), {"kind": "consume", "offset": 1})
    assert observe(s)["consumer"] == {"offset": 1, "records": ["m@0"], "error": None}
    s = step(s, kind="consume", offset=3)
    assert observe(s)["consumer"]["error"] == "OFFSET_OUT_OF_RANGE"
