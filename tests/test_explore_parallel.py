"""explore on several processes (conformance/search/explore_parallel.py): whatever the worker
count, the same states, the same search tree (each state reached by the same first path),
the same levels and the same shortest witnesses as the sequential search, which
tests/test_explore.py checks against a naive search. Also the cached hash that makes
states cheap to deduplicate (reference_impl/values.py, ``cached_hash``)."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import subprocess
import sys

import pytest

from conformance.search.explore import explore, path_to
from conformance.search.explore_alphabet import Richer
from conformance.search.explore_parallel import available, dumps, search
from reference_impl import Config, Generation, apply, enabled_steps, initial_state
from reference_impl.values import HASH, evolve

pytestmark = pytest.mark.skipif(not available(), reason="worker processes are forked")

TWO = ("A", "B")
THREE = ("A", "B", "C")


def _config(generation: Generation, replicas: tuple[str, ...] = TWO) -> Config:
    return Config(replicas=replicas, generation=generation, replica_high_watermark_checkpoint_interval_ms=0)


@pytest.mark.parametrize("generation", list(Generation))
@pytest.mark.parametrize("workers", [2, 3])
def test_the_parallel_search_builds_the_sequential_tree(generation: Generation, workers: int) -> None:
    config = _config(generation)
    sequential, tree = explore(config, depth=4, max_records=2)
    parallel, same = search(config, depth=4, max_records=2, workers=workers)
    assert parallel.complete and parallel.levels == sequential.levels and parallel.states == sequential.states
    assert parallel.transitions == sequential.transitions and parallel.rules == sequential.rules
    assert same == tree  # every state, with the same parent and step: the same first paths
    assert [(f.invariant, f.path) for f in parallel.findings] == [(f.invariant, f.path) for f in sequential.findings]


def test_the_parallel_search_finds_the_same_shortest_witness_without_the_tree() -> None:
    config = _config(Generation.HW_TRUNCATION)
    sequential, _ = explore(config, depth=6, max_records=1)
    parallel, partial = search(config, depth=6, max_records=1, workers=2, tree=False)
    assert [f.invariant for f in sequential.findings] == ["StrongIsr"]
    assert [(f.invariant, f.detail, f.path) for f in parallel.findings] == [
        (f.invariant, f.detail, f.path) for f in sequential.findings
    ]
    assert parallel.levels == sequential.levels
    for finding in parallel.findings:  # the partial tree holds each witness's path
        end = initial_state(config)
        for step in finding.path:
            end = evolve(apply(end, step), fired=())
        assert path_to(partial, end) == finding.path


@pytest.mark.parametrize("generation", list(Generation))
def test_the_reduced_parallel_search_keeps_the_same_representatives(generation: Generation) -> None:
    """With three replicas (message orders merged, pointless steps not tried): the same
    real state for every class; only the sleep sets' transitions are taken too."""
    config = _config(generation, THREE)
    sequential, tree = explore(config, depth=3, max_records=1)
    parallel, same = search(config, depth=3, max_records=1, workers=2)
    assert parallel.levels == sequential.levels and same == tree
    assert parallel.transitions == sequential.transitions + sequential.slept and parallel.slept == 0


def test_the_richer_alphabet_and_the_fault_steps_in_parallel() -> None:
    config = _config(Generation.DIVERGING_EPOCH)
    extra = Richer(partial_fetches=True, in_flight=True)
    sequential, tree = explore(config, depth=3, max_records=2, faults=True, extra=extra)
    parallel, same = search(config, depth=3, max_records=2, faults=True, extra=extra, workers=2)
    assert parallel.levels == sequential.levels and same == tree


def test_what_follows_the_sequential_order_stays_sequential() -> None:
    config = _config(Generation.LEADER_EPOCH)
    capped, tree = search(config, depth=6, max_records=1, max_states=500, workers=2)
    assert not capped.complete and capped.states == len(tree) == 500


def test_a_spent_time_budget_leaves_the_search_incomplete() -> None:
    result, _ = search(_config(Generation.LEADER_EPOCH), depth=8, max_records=2, seconds=0.0, workers=2)
    assert not result.complete and result.depth_completed < 8


class _Readings:
    """A clock that moves one second per reading: how far a worker gets before its budget
    runs out no longer depends on the machine (a forked worker counts on from the parent's)."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 1.0
        return self.now


def test_a_level_the_budget_cuts_is_counted_where_found_and_ends_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """The level the budget cuts is not exchanged (shipping it cost 10 s and more past a
    60 s budget): its count is a lower bound, and the invariants broken on any state found
    there are reported, each with a real witness."""
    import conformance.search.explore_parallel as module
    from reference_impl import check

    config = _config(Generation.HW_TRUNCATION)
    full, _ = explore(config, depth=6, max_records=1)
    assert [f.invariant for f in full.findings] == ["StrongIsr"]
    found = 0
    for budget in (120.0, 160.0, 200.0):  # readings: the workers reach level 6 after about 50 each
        monkeypatch.setattr(module, "time", _Readings())
        cut, _ = search(config, depth=6, max_records=1, seconds=budget, workers=2, tree=False)
        assert not cut.complete and cut.depth_completed == 5 and cut.levels[:5] == full.levels[:5]
        assert 0 < cut.levels[5] < full.levels[5]
        for finding in cut.findings:
            end = initial_state(config)
            for step in finding.path:
                end = apply(end, step)
            assert len(finding.path) == 6 and finding.invariant in {v.invariant for v in check(end)}
            found += 1
    assert found, "some cut level held the StrongIsr violation"


def test_a_level_stopped_before_it_found_anything_leaves_the_one_before_complete(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``depth_completed`` is the level before the one a budget stopped, found something
    there or not (it was one less when a search stopped at a level's first state); and a
    level whose every state was expanded before the budget ran out is complete."""
    import conformance.search.explore as sequential_module
    import conformance.search.explore_parallel as module

    config = _config(Generation.LEADER_EPOCH)
    full, _ = explore(config, depth=4, max_records=1)
    # the sequential search reads the clock once before each state it expands: with one
    # reading a second, a budget of 1 + level 1's states expands levels 1 and 2 and stops
    # at the first state of level 3
    monkeypatch.setattr(sequential_module, "time", _Readings())
    stopped, _ = explore(config, depth=4, max_records=1, seconds=1.0 + full.levels[0])
    assert not stopped.complete and stopped.stopped_at == 3
    assert stopped.levels == full.levels[:2] and stopped.depth_completed == 2
    # two workers, a budget spent before the level starts (each reads the clock first)
    monkeypatch.setattr(module, "time", _Readings())
    at_once, _ = search(config, depth=4, max_records=1, seconds=0.5, workers=2, tree=False)
    assert not at_once.complete and at_once.stopped_at == 1 and at_once.depth_completed == 0
    # budgets spent once a level is found and exchanged (each worker reads the clock before
    # every 32 states it expands and once after the exchange; these two run out at the
    # reading after level 2's exchange, and level 3's): the level is whole, and the search
    # stops without starting the next (which would find a few states and be cut)
    for budget, levels in ((3.5, 2), (6.5, 3)):
        monkeypatch.setattr(module, "time", _Readings())
        spent, _ = search(config, depth=4, max_records=1, seconds=budget, workers=2, tree=False)
        assert not spent.complete and spent.stopped_at == levels + 1 and spent.depth_completed == levels
        assert spent.levels == full.levels[:levels]


def test_a_cached_hash_is_the_generated_one_and_stays_in_its_value() -> None:
    state = initial_state(_config(Generation.LEADER_EPOCH))
    fields = tuple(getattr(state, f.name) for f in dataclasses.fields(state) if f.compare)
    assert hash(state) == hash(fields) and state.__dict__[HASH] == hash(state)
    later = evolve(state, clock_ms=5)
    assert HASH not in later.__dict__ and hash(later) != hash(state)
    assert HASH not in apply(state, enabled_steps(state)[0]).__dict__
    copied = pickle.loads(pickle.dumps(state))
    assert HASH not in copied.__dict__ and copied == state and hash(copied) == hash(state)
    shipped = pickle.loads(dumps(state))  # logs and histories as their records and items
    assert shipped == state and hash(shipped) == hash(state)


_OWNERS = """
import json
from conformance.search.explore import explore
from conformance.search.explore_parallel import Search
from reference_impl import Config, Generation
config = Config(replicas=("A", "B", "C"), generation=Generation.LEADER_EPOCH)
_, tree = explore(config, depth=4, max_records=2)
search = Search(config, 2, False, False, None, None, 2, False, True)
rows = [[s.controller.leader or "", s.controller.epoch, len(s.produces), search.owner(s)] for s in tree]
print(json.dumps(sorted(rows)))
"""


def test_a_state_s_owner_does_not_depend_on_the_hash_seed() -> None:
    """How evenly the states split between the workers, and so how long every level waits
    for the slower one, is the same in every run: the owner hashes integers only (the
    leader by its position), never a name, whose hash changes with ``PYTHONHASHSEED``."""

    def owners(seed: str) -> list[list[object]]:
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", _OWNERS], env=env, capture_output=True, text=True, check=True)
        listed: list[list[object]] = json.loads(done.stdout)
        return listed

    first = owners("1")
    assert first == owners("2") == owners("3")
    assert {leader for leader, *_ in first} == {"", "A", "B", "C"}  # elections were explored
    assert {owner for *_, owner in first} == {0, 1}  # and the states split
