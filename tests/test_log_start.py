"""A log that starts high (LOG-START-1..3): the offsets below the start are stored nowhere
(``Log.starting_at``), and behave as the rules say whatever the start is.

The start is 10^9 here: a log that stored a placeholder per offset below it would not
fit in memory, so these tests fail on such a log rather than merely run slowly."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_impl import apply, check, config_from_dict, epoch_cache, initial_state, observe, step_from_dict
from reference_impl.log import GAP

START = 10**9
DE = config_from_dict({"replicas": ["A", "B"], "generation": "diverging-epoch"})


def _state() -> object:
    both = {"log_start": START, "log": ["a@0", "b@0"], "hw": START + 2}
    return initial_state(DE, {"isr": ["A", "B"], "replicas": {"A": both, "B": dict(both)}})


def _do(state: object, **step: object) -> object:
    return apply(state, step_from_dict(step))  # type: ignore[arg-type]


def test_a_log_starting_at_a_billion_stores_only_its_records() -> None:
    state = _state()
    a = state.replica("A")  # type: ignore[attr-defined]
    assert a.log.base == START and len(a.log) == START + 2 and a.leo == START + 2
    assert a.log[0] is GAP and a.log[START - 1] is GAP and a.log[START].value == "a"
    assert a.log.read(START - 1, START + 1) == (GAP, a.log[START])
    seen = observe(state)["replicas"]["A"]  # type: ignore[arg-type]
    assert (seen["log_start"], seen["log"], seen["leo"], seen["epoch_cache"]) == (
        START,
        ["a@0", "b@0"],
        START + 2,
        [[0, START]],
    )
    assert check(state) == []  # type: ignore[arg-type]


def test_reads_below_the_start_are_out_of_range_and_at_it_return_the_records() -> None:
    state = _state()
    below = observe(_do(state, kind="consume", offset=START - 1))["consumer"]  # type: ignore[arg-type]
    assert below == {"offset": START - 1, "records": [], "error": "OFFSET_OUT_OF_RANGE"}  # CONSUME-2
    at = observe(_do(state, kind="consume", offset=START))["consumer"]  # type: ignore[arg-type]
    assert at == {"offset": START, "records": ["a@0", "b@0"], "error": None}  # CONSUME-1


def test_produce_replicate_and_check_from_a_high_start() -> None:
    state = _do(_state(), kind="produce", values=["c"], acks="all")
    state = _do(state, kind="fetch_round", replica="B")
    state = _do(state, kind="fetch", replica="B")  # its fetch offset moves the leader's HW (HW-LEADER-1)
    seen = observe(state)  # type: ignore[arg-type]
    assert seen["replicas"]["B"]["log"] == ["a@0", "b@0", "c@0"] and seen["replicas"]["A"]["hw"] == START + 3
    assert seen["producer"] == {"p1": "acked"}
    assert check(state) == []  # type: ignore[arg-type]


def test_truncation_below_a_high_start_moves_it() -> None:
    """LOG-START-2 at 10^9: the replica starts empty at the offset it was cut to."""
    from reference_impl.draft import Draft
    from reference_impl.replica_ops import truncate

    draft = Draft(_state())  # type: ignore[arg-type]
    truncate(draft, "B", START - 5, rule="TRUNC-EPOCH-2")
    b = observe(draft.freeze())["replicas"]["B"]
    assert (b["log_start"], b["log"], b["leo"], b["hw"], b["epoch_cache"]) == (START - 5, [], START - 5, START - 5, [])
    assert "LOG-START-2" in draft.fired


def _naive_truncate_from_start(cache: tuple[tuple[int, int], ...], start: int) -> tuple[tuple[int, int], ...]:
    """EPOCH-CACHE-4 as ``LeaderEpochFileCache.truncateFromStart`` (2.6.3) writes it: split
    the entries at ``startOffset > start``; the last of the others comes back at ``start``."""
    later = tuple(e for e in cache if e[1] > start)
    earlier = [e for e in cache if e[1] <= start]
    return ((earlier[-1][0], start), *later) if earlier else cache


def _cache(steps: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """A valid cache: epochs and start offsets strictly increasing (EPOCH-CACHE-1)."""
    return tuple(itertools.accumulate(steps, lambda a, b: (a[0] + b[0] + 1, a[1] + b[1]), initial=(0, 0)))[1:]


@given(
    cache=st.lists(st.tuples(st.integers(0, 3), st.integers(1, 4)), max_size=6).map(_cache), start=st.integers(0, 30)
)
def test_truncate_from_start_matches_kafka(cache: tuple[tuple[int, int], ...], start: int) -> None:
    assert epoch_cache.truncate_from_start(cache, start) == _naive_truncate_from_start(cache, start)


@pytest.mark.parametrize("generation", ["hw-truncation", "leader-epoch", "diverging-epoch"])
def test_a_follower_takes_the_leaders_log_start_at_a_billion(generation: str) -> None:
    """LOG-START-4 (LE, DE; not HT): B starts at 10^9 with a, b; A's log starts one higher.
    B's fetch from START + 2 returns nothing new but A's log start, which B takes: ``a``
    leaves its log, its cache starts at START + 1, and its log still stores only records."""
    config = config_from_dict({"replicas": ["A", "B"], "generation": generation})
    a = {"log_start": START + 1, "log": ["b@0"], "hw": START + 1}
    b = {"log_start": START, "log": ["a@0", "b@0"], "hw": START}
    state = initial_state(config, {"isr": ["A", "B"], "replicas": {"A": a, "B": b}})
    state = _do(state, kind="fetch", replica="B", max_wait_ms=0)
    state = _do(state, kind="deliver_fetch", replica="B")
    seen = observe(state)["replicas"]["B"]  # type: ignore[arg-type]
    raises = config.profile.follower_raises_log_start
    assert raises == (generation != "hw-truncation")
    if raises:
        assert (seen["log_start"], seen["log"], seen["leo"], seen["hw"]) == (START + 1, ["b@0"], START + 2, START + 1)
        assert seen["epoch_cache"] == [[0, START + 1]]
        assert state.replica("B").log.base == START + 1  # type: ignore[attr-defined]
    else:
        assert (seen["log_start"], seen["log"], seen["hw"]) == (START, ["a@0", "b@0"], START + 1)
    assert "LOG-START-4" in state.fired if raises else "LOG-START-4" not in state.fired  # type: ignore[attr-defined]
    assert check(state) == []  # type: ignore[arg-type]
