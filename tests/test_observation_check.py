"""The compiled observation check agrees with jsonschema on the spec's observation definition:
on reference observations (random runs, every bundled fixture) and on mutated ones."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.adapters.deltas import Grown
from conformance.fixtures.loading import load_fixtures
from conformance.fixtures.paths import FIXTURES_DIR
from conformance.fixtures.schemas import first_error, validator
from conformance.judging.observation_check import (
    SchemaNotCompilable,
    check_observation,
    check_shared_observation,
    compile_definition,
)
from conformance.search.distribution import RandomChooser, draw_config, draw_steps
from reference_impl import Generation, StepRejected, apply, initial_state, observe
from reference_impl.observe import Amended, Observer


def schema_verdict(obs: Any) -> bool:
    return first_error(obs, "definitions", "observation") is None


def reference_observations(seed: int, steps: int = 25, observer: Observer | None = None) -> list[dict[str, Any]]:
    """The observations of one seeded random run (config and steps as kconform fuzz draws);
    with ``observer``, made by it (parts shared with the observation before)."""
    rng = random.Random(seed)
    chooser = RandomChooser(rng)
    generation = list(Generation)[seed % len(Generation)]
    state = initial_state(draw_config(chooser, generation))
    out = [observe(state, observer)]
    for _ in range(steps):
        batch = draw_steps(chooser, state, refused=False)
        if not batch:
            break
        for step in batch:
            try:
                state = apply(state, step)
            except StepRejected:
                continue
            out.append(observe(state, observer))
    return out


def test_every_reference_observation_of_the_fixtures_fits_both() -> None:
    fixtures, problems = load_fixtures([FIXTURES_DIR])
    assert not problems
    seen = 0
    for fixture in fixtures:
        state = fixture.start()
        for fs in fixture.steps:
            try:
                state = apply(state, fs.step)
            except StepRejected:
                continue
            obs = observe(state)
            assert check_observation(obs) is None, (fixture.id, fs.number, check_observation(obs))
            assert validator("definitions", "observation").is_valid(obs), (fixture.id, fs.number)
            seen += 1
    assert seen > 500


def test_reference_observations_of_random_runs_fit_both() -> None:
    for seed in range(30):
        for obs in reference_observations(seed)[::4]:
            assert check_observation(obs) is None
            assert schema_verdict(obs)


JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from(["", "x", "a@0", "a@x", "A", "leader", "truncating", "in_flight", "@"]),
    st.lists(st.sampled_from(["a@0", "x", 1, None]), max_size=3),
    st.dictionaries(st.sampled_from(["A", "x", "hw", "status"]), st.integers(-1, 2), max_size=2),
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every location in ``node`` (dict keys and list indexes)."""
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out += _paths(value, (*prefix, index))
    return out


def _at(node: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        node = node[part]
    return node


@st.composite
def mutated(draw: Any) -> dict[str, Any]:
    """A reference observation with a few mutations: a value replaced by junk (a wrong
    type, a bad enum, a bad pattern, a negative number), a key removed, a key added."""
    seed = draw(st.integers(0, 40))
    runs = reference_observations(seed, steps=15)
    obs = copy.deepcopy(runs[draw(st.integers(0, len(runs) - 1))])
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(obs)
        path = paths[draw(st.integers(0, len(paths) - 1))]
        action = draw(st.sampled_from(["replace", "remove", "add", "replace"]))
        if not path:
            continue
        parent = _at(obs, path[:-1])
        if action == "replace":
            parent[path[-1]] = draw(JUNK)
        elif action == "remove":
            if isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent.pop(path[-1])
        else:
            target = _at(obs, path)
            if isinstance(target, dict):
                target[draw(st.sampled_from(["extra", "hw", "status", "Z", "records"]))] = draw(JUNK)
            elif isinstance(target, list):
                target.append(draw(JUNK))
    return obs


@settings(max_examples=300)
@given(mutated())
def test_the_compiled_check_agrees_with_jsonschema_on_mutated_observations(obs: dict[str, Any]) -> None:
    problem = check_observation(obs)
    assert (problem is None) == schema_verdict(obs), (problem, first_error(obs, "definitions", "observation"))
    if problem is not None:
        assert ": " in problem


def _changed_at(obs: dict[str, Any], path: tuple[Any, ...]) -> Any:
    """A copy of ``obs`` whose containers along ``path`` are new (the rest shared, as a
    delta leaves them), and the copy's container at ``path[:-1]``."""
    new = dict(obs)
    node: Any = new
    for part in path[:-1]:
        child = node[part]
        node[part] = child = dict(child) if isinstance(child, dict) else list(child)
        node = child
    return new, node


@settings(max_examples=200)
@given(seed=st.integers(0, 60), data=st.data())
def test_a_shared_check_gives_the_verdict_of_a_whole_one(seed: int, data: st.DataObject) -> None:
    """``check_shared_observation`` passes a part it passed before without walking it: on a
    run's observations made by one ``Observer`` (unchanged parts shared), and on one of
    them changed as a delta changes it (new containers along the changed path, the rest the
    same objects), its verdict and message are ``check_observation``'s."""
    runs = reference_observations(seed, steps=15, observer=Observer())
    for obs in runs:
        assert check_shared_observation(obs) is None
    base = runs[data.draw(st.integers(0, len(runs) - 1), label="observation")]
    paths = [p for p in _paths(base) if p]
    path = paths[data.draw(st.integers(0, len(paths) - 1), label="path")]
    new, parent = _changed_at(base, path)
    action = data.draw(st.sampled_from(["replace", "remove", "add"]), label="action")
    if action == "replace":
        parent[path[-1]] = data.draw(JUNK, label="junk")
    elif action == "remove":
        del parent[path[-1]]
    elif isinstance(parent, dict):
        parent[data.draw(st.sampled_from(["extra", "hw", "status", "Z"]), label="key")] = data.draw(JUNK)
    else:
        parent.append(data.draw(JUNK, label="item"))
    assert check_shared_observation(new) == check_observation(new)


def test_a_shared_check_does_not_walk_a_part_it_passed_again() -> None:
    """What makes it cheap, and why it is only for observations nobody changes once made:
    a log that passed, changed in place afterwards, passes again unread."""
    obs = reference_observations(3, steps=15, observer=Observer())[-1]
    replica = next(iter(obs["replicas"]))
    assert check_shared_observation(obs) is None
    obs["replicas"][replica]["log"].append(17)  # breaks the promise: a shared part changed
    assert check_observation(obs) is not None
    assert check_shared_observation(obs) is None


@settings(max_examples=100)
@given(st.recursive(JUNK, lambda inner: st.dictionaries(st.sampled_from(["leader", "isr", "replicas", "A"]), inner)))
def test_the_compiled_check_agrees_with_jsonschema_on_random_values(value: Any) -> None:
    assert (check_observation(value) is None) == schema_verdict(value)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda o: o["replicas"]["B"].__setitem__("hw", "x"), 'replicas.B.hw: expected an integer, got string "x"'),
        (lambda o: o.__setitem__("leader", 3), "leader: expected a string or null, got number 3"),
        (lambda o: o["replicas"]["A"].__setitem__("role", "boss"), 'replicas.A.role: "boss" is not one of'),
        (lambda o: o["replicas"]["A"].__setitem__("leo", -1), "replicas.A.leo: -1 is below the minimum 0"),
        (lambda o: o["isr"].append(""), "isr.2: expected at least 1 characters"),
        (lambda o: o.__setitem__("surprise", 1), "surprise: unknown field"),
        (lambda o: o["replicas"]["A"].__setitem__("hw", True), "replicas.A.hw: expected an integer, got boolean"),
    ],
)
def test_the_problem_names_the_path_and_what_is_wrong(change: Any, expected: str) -> None:
    obs = observe(initial_state(draw_config(RandomChooser(random.Random(1)), Generation.LEADER_EPOCH, sizes=(2,))))
    assert check_observation(obs) is None
    change(obs)
    problem = check_observation(obs)
    assert problem is not None and problem.startswith(expected), problem
    assert not schema_verdict(obs)


def test_a_keyword_the_compiler_does_not_know_is_refused() -> None:
    root = {"$defs": {"x": {"type": "object", "oneOf": [{"type": "string"}]}}}
    with pytest.raises(SchemaNotCompilable, match="oneOf"):
        compile_definition(root, "x")


def test_required_pattern_properties_and_property_names_compile_as_jsonschema_reads_them() -> None:
    import jsonschema

    node = {
        "type": "object",
        "required": ["a"],
        "patternProperties": {"^n_": {"type": "integer"}},
        "propertyNames": {"maxLength": 4},
        "additionalProperties": False,
    }
    check = compile_definition({"$defs": {"x": node}}, "x")
    for value in ({"a": 1}, {}, {"a": 1, "n_1": 2}, {"a": 1, "n_1": "x"}, {"a": 1, "zz": 1}, {"a": 1, "n_123": 1}):
        assert (check(value) is None) == jsonschema.Draft202012Validator(node).is_valid(value), value


def test_the_mutations_reach_both_verdicts() -> None:
    """The agreement test is worth something only if mutations break the shape often."""
    from hypothesis import find

    find(mutated(), lambda obs: check_observation(obs) is not None)
    find(mutated(), lambda obs: check_observation(obs) is None and obs != {})


def test_garbage_at_step_two_is_caught_at_step_two() -> None:
    """The issue's case: a well-formed first observation, then garbage. Checked after every
    step through an adapter, the second observation is refused, naming the field."""
    from conformance.adapters.base import Description
    from conformance.adapters.in_process import FunctionAdapter
    from reference_impl import OBSERVATION_FIELDS, REPLICA_FIELDS, STEP_TYPES, config_from_dict, step_from_dict

    steps = 0

    def garbled(state: Any) -> dict[str, Any]:
        obs = observe(state)
        if steps == 2:
            obs["replicas"]["B"]["hw"] = "x"
        return obs

    def step(state: Any, data: dict[str, Any]) -> Any:
        nonlocal steps
        steps += 1
        return apply(state, step_from_dict(data))

    adapter = FunctionAdapter(
        Description("garbled", "0", ("leader-epoch",), tuple(STEP_TYPES), OBSERVATION_FIELDS, REPLICA_FIELDS),
        init=lambda config: initial_state(config_from_dict(config)),
        apply=step,
        observe=garbled,
    )
    adapter.reset({"replicas": ["A", "B"], "generation": "leader-epoch"})
    problems = []
    for data in ({"kind": "produce", "values": ["m0"]}, {"kind": "fetch_round", "replica": "B"}):
        result = adapter.step(data)
        problems.append(check_observation(result.observation))
    assert problems == [None, 'replicas.B.hw: expected an integer, got string "x"']


@settings(max_examples=200)
@given(seed=st.integers(0, 60), data=st.data())
def test_a_grown_log_is_checked_from_what_it_kept_with_the_whole_checks_verdict(seed: int, data: st.DataObject) -> None:
    """A log that says its first ``kept`` records are its ``base``'s (a stdio delta's
    ``Grown`` log, an ``Observer``'s ``LogRecords``), where the base passed, is checked
    from ``kept`` on only: any records appended (junk included) after any cut of a log
    that passed give the whole check's verdict and message."""
    runs = reference_observations(seed, steps=15, observer=Observer())
    obs = runs[data.draw(st.integers(0, len(runs) - 1), label="observation")]
    assert check_shared_observation(obs) is None
    replica = data.draw(st.sampled_from(sorted(obs["replicas"])), label="replica")
    base = obs["replicas"][replica]["log"]
    kept = data.draw(st.integers(0, len(base)), label="kept")
    tail = data.draw(st.lists(st.one_of(st.sampled_from(["m9@0", "m1@2"]), JUNK), max_size=3), label="appended")
    new, parent = _changed_at(obs, ("replicas", replica, "log"))
    parent["log"] = Grown(base[:kept] + tail, base, kept)
    assert check_shared_observation(new) == check_observation(new)


def test_a_grown_log_is_not_read_below_what_it_kept() -> None:
    """What makes a growing log cheap, and why only kconform makes such logs (from a delta,
    or the reference's ``Observer``): a record below ``kept`` is taken as its base's."""
    obs = reference_observations(3, steps=15, observer=Observer())[-1]
    replica = next(r for r, rep in obs["replicas"].items() if rep["log"])
    base = obs["replicas"][replica]["log"]
    assert check_shared_observation(obs) is None
    new, parent = _changed_at(obs, ("replicas", replica, "log"))
    parent["log"] = Grown([17, *base[1:], "m9@0"], base, len(base))  # breaks the promise below kept
    assert check_observation(new) is not None
    assert check_shared_observation(new) is None
    new, parent = _changed_at(obs, ("replicas", replica, "log"))
    parent["log"] = Grown([*base, 17], base, len(base))  # the new tail is read
    assert check_shared_observation(new) == check_observation(new) is not None


@settings(max_examples=200)
@given(seed=st.integers(0, 60), data=st.data())
def test_an_amended_map_is_checked_on_its_changed_keys_with_the_whole_checks_verdict(
    seed: int, data: st.DataObject
) -> None:
    """A large mapping ``Amended`` from one that passed (the produce outcomes of a long run,
    made by the ``Observer``, a corpus trace or a stdio delta) is checked on its changed
    keys only, twice over (amended from a plain map, then from an amended one): any values
    there give the whole check's verdict and message."""
    obs = reference_observations(seed, steps=15, observer=Observer())[-1]
    producer: dict[str, Any] = {f"p{i}": "acked" for i in range(20)}
    current = {**obs, "producer": producer}
    assert check_shared_observation(current) is None
    for round_ in range(2):
        keys = data.draw(st.lists(st.sampled_from([*producer, "p99", "x"]), max_size=3, unique=True), label="keys")
        amended = Amended(current["producer"], keys)
        for key in keys:
            amended[key] = data.draw(st.one_of(st.sampled_from(["acked", "pending", "failed"]), JUNK), label=key)
        new = {**current, "producer": amended}
        verdict = check_shared_observation(new)
        assert verdict == check_observation(new), round_
        if verdict is not None:
            return
        current = new


def test_an_amended_map_is_not_read_outside_its_changed_keys() -> None:
    """Why only kconform makes them: an entry outside ``changed`` is taken as its base's."""
    obs = reference_observations(3, steps=15, observer=Observer())[-1]
    producer = {f"p{i}": "acked" for i in range(20)}
    assert check_shared_observation({**obs, "producer": producer}) is None
    amended = Amended(producer, ["p1"])
    amended["p2"] = 17  # breaks the promise: changed, but not named
    assert check_observation({**obs, "producer": amended}) is not None
    assert check_shared_observation({**obs, "producer": amended}) is None
    again = Amended(amended, ["p3"])  # amended from an amended map: named by its token
    again["p4"] = 18
    assert check_shared_observation({**obs, "producer": again}) is None
