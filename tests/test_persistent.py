"""The persistent structures (``log.py``, ``history.py``) against plain lists.

Random programs of appends, truncations and replacements run on both, branching from
kept older values (as a model checker or a replay from a kept state does), and every
kept value must still read as the list it was made from: the buffers the values share
never show one value's changes to another.
"""

from __future__ import annotations

import itertools
import random
from operator import itemgetter
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impl import log as logmod
from reference_impl.history import CHUNK, History
from reference_impl.log import GAP, Log, Record

ops = st.lists(
    st.tuples(st.sampled_from(["extend", "truncate", "branch"]), st.integers(0, 40), st.integers(0, 5)),
    max_size=40,
)


@settings(max_examples=100, deadline=None)
@given(program=ops, base=st.sampled_from([0, 0, 3, 17]))
def test_log_reads_as_the_list_it_was_made_from(program: list[tuple[str, int, int]], base: int) -> None:
    """``base``: a log that starts at that offset (LOG-START-1) reads as a list with
    ``GAP`` placeholders below it, although it stores none (``Log.starting_at``)."""
    kept: list[tuple[Log, list[Record]]] = [(Log.starting_at(base), [GAP] * base)]
    log, model = kept[0]
    for n, (op, a, b) in enumerate(program):
        if op == "extend":
            # sometimes the very records another log holds (a follower copying its leader)
            source = kept[a % len(kept)][1]
            records = source[len(model) : len(model) + b] if a % 2 and source[: len(model)] == model else []
            records = records or [Record(f"v{n}-{i}", a % 3) for i in range(b)]
            log, model = log.extend(records), model + records
        elif op == "truncate":
            log, model = log.truncate(a), model[:a]
        else:
            log, model = kept[a % len(kept)]
        kept.append((log, model))
    _reads_as_models(kept, base)


def _reads_as_models(kept: list[tuple[Log, list[Record]]], base: int, pairs: int = 0) -> None:
    """Every kept log reads as its model list, and every neighbouring pair (and ``pairs``
    more pairs, spread over the kept ones) compares as the lists do."""
    for value, expected in kept:
        assert list(value) == expected and len(value) == len(expected)
        assert value.rendered() == [r.render() for r in expected]
        assert value.rendered(base) == [r.render() for r in expected[base:]]
        assert value[:] == tuple(expected) and all(value[o] == expected[o] for o in range(len(expected)))
        start = len(expected) // 3
        assert value.read(start) == tuple(expected[start:])
        assert value.read_entries(start) == tuple((o, r.value, r.epoch) for o, r in enumerate(expected) if o >= start)
        assert value.read_entries(start, start + 2) == tuple(
            (o, r.value, r.epoch) for o, r in enumerate(expected) if start <= o < start + 2
        )
    spread = [(kept[i % len(kept)], kept[(i * 7 + 3) % len(kept)]) for i in range(pairs)]
    for (one, one_list), (other, other_list) in [
        *itertools.pairwise(kept),
        *itertools.pairwise(reversed(kept)),
        *spread,
    ]:
        n = min(len(one_list), len(other_list))
        assert one.same_prefix(other, n) == (one_list[:n] == other_list[:n])
        assert (one == other) == (one_list == other_list)
        differs = [o for o in range(n) if one_list[o] != other_list[o]]
        for start in (0, n // 2):
            first = next((o for o in differs if o >= start), n)
            assert one.first_difference(other, start, n) == first  # asked twice: the second from memory
            assert one.first_difference(other, start, n) == first


@settings(max_examples=100, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    length=st.integers(1, 150),
    base=st.sampled_from([0, 5]),
    segments=st.sampled_from([1, 2, 3, 24]),
)
def test_forked_logs_read_as_their_lists(seed: int, length: int, base: int, segments: int) -> None:
    """A run of divergences (drawn from ``seed``, long enough to build deep histories):
    each step takes a kept log, cuts a few records off and appends others, so the view
    forks a buffer that reads below it from the buffers it came from (merging pieces past
    ``SEGMENTS``), or appends the very records another kept log holds there (a follower
    catching up with its leader). Every kept log must still read as its list, any two
    must compare as their lists do, and no buffer reads from more than ``SEGMENTS`` pieces."""
    rng = random.Random(seed)
    first = [Record("s", 0)] * 3
    kept: list[tuple[Log, list[Record]]] = [(Log.starting_at(base, first), [GAP] * base + first)]
    with patch.object(logmod, "SEGMENTS", segments):
        for n in range(length):
            log, model = kept[-1] if rng.random() < 0.5 else rng.choice(kept)
            cut = max(0, len(model) - rng.choice((0, 0, 1, 2, 5, 20)))
            log, model = log.truncate(cut), model[:cut]
            leader, leader_list = rng.choice(kept)
            if rng.random() < 0.3 and leader_list[:cut] == model and len(leader_list) > cut:
                records = leader.read(cut, cut + rng.randint(1, 6))  # the leader's very record objects
            else:
                records = tuple(Record(f"v{n}-{i}", n % 4) for i in range(rng.randint(1, 6)))
            log, model = log.extend(records), model + list(records)
            assert len(log._buf.starts) <= segments
            kept.append((log, model))
    _reads_as_models(kept, base, pairs=40)


history_ops = st.lists(
    st.tuples(st.sampled_from(["append", "extend", "replace", "branch"]), st.integers(0, 200), st.integers(0, 80)),
    max_size=30,
)


@settings(max_examples=100, deadline=None)
@given(program=history_ops)
def test_history_reads_as_the_list_it_was_made_from(program: list[tuple[str, int, int]]) -> None:
    key = itemgetter(0)
    empty: History[tuple[int, str]] = History(key)
    kept: list[tuple[History[tuple[int, str]], list[tuple[int, str]]]] = [(empty, [])]
    history, model = kept[0]
    for n, (op, a, b) in enumerate(program):
        if op == "append":
            item = (a, f"a{n}")
            history, model = history.append(item), [*model, item]
        elif op == "extend":
            items = [(a + i, f"e{n}") for i in range(b)]
            history, model = history.extend(items), model + items
        elif op == "replace" and model:
            position = a % len(model)
            item = (model[position][0], f"r{n}")
            history, model = history.replace(position, item), [*model[:position], item, *model[position + 1 :]]
        elif op == "branch":
            history, model = kept[a % len(kept)]
        kept.append((history, model))
    for value, expected in kept:
        assert list(value) == expected and len(value) == len(expected)
        for probe in expected[:3] + expected[-3:]:
            position = value.find(key(probe))
            assert position is not None and key(value[position]) == key(probe)
        # what ``missing`` leaves out: exactly the items the list does not hold
        run = expected[len(expected) // 4 : len(expected) // 4 + CHUNK + 5]
        strangers = [(k, "stranger") for k, _ in run[:2]]
        assert value.missing(run) == []
        assert value.missing([*run, *strangers]) == [s for s in strangers if s not in expected]
        assert value.missing(strangers + run) == [s for s in strangers if s not in expected]
    for (one, one_list), (other, other_list) in itertools.pairwise(kept):
        assert other.starts_with(one) == (other_list[: len(one_list)] == one_list)
