"""The fast paths of judging agree with the slow ones they stand in for.

``compare.matches`` (one walk, no field paths) must say "no difference" exactly when the
path-building comparison finds none, and the lazy ``settle.Frontier`` must hold the same
states as one brought up to date after every operation."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.judging.compare import _all, _first, all_divergences, first_divergence, matches, matches_since
from conformance.judging.levels import settled_part
from conformance.judging.settle import Frontier
from reference_impl import StepRejected, apply, initial_state, observe
from reference_impl.config import Config, Generation
from reference_impl.observe import Amended, changed_keys
from reference_impl.steps import step_from_dict

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2, 3), st.sampled_from(["A", "B", "x@0"]))
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "hw", "B"]), inner, max_size=3)
    ),
    max_leaves=12,
)


@given(JSON, JSON)
@settings(max_examples=400, deadline=None)
def test_matches_is_the_path_comparison_without_paths(expected: Any, actual: Any) -> None:
    assert matches(expected, actual) == (_first(expected, actual, "") is None)
    assert first_divergence(expected, actual) == _first(expected, actual, "")
    assert all_divergences(expected, actual) == _all(expected, actual, "")


@given(JSON)
@settings(max_examples=200, deadline=None)
def test_an_actual_mapping_shows_itself_and_a_bool_is_not_an_int(value: Any) -> None:
    assert matches(value, value)
    assert not matches(True, 1)
    assert matches(1, True) == (_first(1, True, "") is None)


def _numbers_for_bools(value: Any, flips: list[bool]) -> Any:
    """``value`` with some of its bools (by ``flips``, in walk order) turned into 0 or 1:
    equal in Python, different in JSON."""
    if type(value) is bool:
        return int(value) if flips and flips.pop() else value
    if isinstance(value, dict):
        return {k: _numbers_for_bools(v, flips) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers_for_bools(v, flips) for v in value]
    return value


@given(JSON, st.lists(st.booleans(), max_size=12))
@settings(max_examples=400, deadline=None)
def test_equal_values_still_tell_a_bool_from_a_number(expected: Any, flips: list[bool]) -> None:
    actual = _numbers_for_bools(expected, flips)
    assert actual == expected  # Python equality cannot see the difference
    assert matches(expected, actual) == (_first(expected, actual, "") is None)
    assert matches({"replicas": {"B": expected}}, {"replicas": {"B": actual}}) == (_first(expected, actual, "") is None)


def test_other_mapping_types_take_the_general_path() -> None:
    expected = OrderedDict(hw=1)
    assert matches(expected, {"hw": 1, "leo": 2})
    assert not matches(expected, {"hw": 2})
    assert first_divergence(expected, {"hw": 2}) is not None


STEPS = [
    {"kind": "produce", "values": ["x"], "acks": "1"},
    {"kind": "fetch", "replica": "B"},
    {"kind": "fetch", "replica": "C"},
    {"kind": "tick", "ms": 100},
    {"kind": "fetch", "replica": "B"},
    {"kind": "tick", "ms": 500},
    {"kind": "produce", "values": ["y"], "acks": "all"},
    {"kind": "fetch", "replica": "C"},
    {"kind": "crash", "replica": "B"},
    {"kind": "tick", "ms": 20000},
]


def test_a_lazy_frontier_holds_what_an_eager_one_holds() -> None:
    for generation in Generation:
        config = Config(replicas=("A", "B", "C"), generation=generation)
        state = initial_state(config)
        lazy = Frontier(state, {"deliver_fetch"})
        eager = Frontier(state, {"deliver_fetch"})
        for raw in STEPS:
            step = step_from_dict(raw)
            try:
                state = apply(state, step)
            except StepRejected:
                continue
            lazy.step(step, state)
            eager.step(step, state)
            part = settled_part(observe(state))
            lazy.keep(part, observe(state))
            eager.keep(part, observe(state))
            assert eager.states  # brought up to date now, every step
        assert lazy.states == eager.states


KEYS = st.sampled_from([f"p{i}" for i in range(24)])
STATUS = st.sampled_from(["acked", "pending", "not_enough_replicas", True, 1, 0, False])
EDITS = st.lists(st.tuples(KEYS, st.one_of(st.none(), STATUS)), max_size=4)


def _amend(base: dict[str, Any], edits: list[tuple[str, Any]], amended: bool) -> dict[str, Any]:
    """``base`` with ``edits`` (None removes the key), as an ``Amended`` or a plain copy."""
    out: dict[str, Any] = Amended(base, [k for k, _ in edits]) if amended else dict(base)
    for key, value in edits:
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


@given(
    st.dictionaries(KEYS, STATUS, max_size=24),
    st.dictionaries(KEYS, STATUS, max_size=4),
    EDITS,
    EDITS,
    st.booleans(),
    st.booleans(),
)
@settings(max_examples=500, deadline=None)
def test_amended_mappings_compare_on_their_changed_keys_as_whole_ones_do(
    common: dict[str, Any],
    extra: dict[str, Any],
    ours: list[tuple[str, Any]],
    theirs: list[tuple[str, Any]],
    amend_ours: bool,
    amend_theirs: bool,
) -> None:
    """After a matching pair (the expectation states part of what the implementation
    reports), each side amended by a few keys, or copied whole: ``matches_since`` gives
    ``matches``'s verdict, large mappings (more than ``LARGE`` entries) included."""
    before = dict(common)
    seen = {**extra, **common}
    assert matches({"producer": before}, {"producer": seen})
    expected = {"producer": _amend(before, ours, amend_ours)}
    actual = {"producer": _amend(seen, theirs, amend_theirs)}
    verdict = matches_since(expected, actual, {"producer": before}, {"producer": seen})
    assert verdict == matches(expected, actual)
    assert changed_keys(expected["producer"], before) == ([k for k, _ in ours] if amend_ours else None)
