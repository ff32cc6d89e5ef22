"""``explore`` on several processes: the same states, the same shortest witnesses.

The sequential search (``explore.explore``) spends nearly all its time applying steps and
checking invariants, one state after another, on one core. This search splits the states
among ``workers`` forked processes by the hash of their deduplication key (a state's
*owner*): the owner alone remembers the states it owns, so two paths to one state always
meet in one process and deduplication stays exact (whole states compared, never a
fingerprint). Level by level, each worker expands the frontier states it owns, keeps the
successors it owns and sends the others to their owners (pickled, relayed by the parent
process); each owner then keeps, of every state new at this level, one arrival.

Which arrival: the one the sequential search keeps. A state is named by its *path key*,
the positions of its path's steps in each state's step list (``explore.steps_of``). The
sequential search expands a level in the order it found it and tries each state's steps in
list order, so it finds a level's states in lexicographic order of their path keys, and
keeps the first arrival of each: the one with the least path key. Each owner keeps that
one too, whatever the worker count, and the first violation of each invariant is the one
on the least (depth, path key). A witness path is rebuilt from its path key by replaying
it from the initial state. ``tests/test_explore_parallel.py`` checks states, levels,
trees and witnesses against the sequential search.

What it gives up: the search tree stays in the workers (``collect`` sends it back, at
the cost of pickling every state: for tests and small searches; replaying an
implementation needs it, so ``kconform explore --impl`` searches sequentially); sleep sets
(their bookkeeping follows the sequential order of arrivals: without them the same states
are reached, through a few more transitions); ``max_states`` and ``stop_on_finding`` (they
cut the search at a point of the sequential order).
"""

from __future__ import annotations

import functools
import io
import multiprocessing
import os
import pickle
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from reference_impl import Config, State, Step, apply, check, initial_state
from reference_impl.history import History
from reference_impl.log import Log, Record
from reference_impl.steps import IsrExpiration

from .explore import (
    EXPECTED_VIOLATIONS,
    Exploration,
    Finding,
    Shared,
    drop_outputs,
    explore,
    state_key,
    steps_of,
    transition,
    without_gc,
)
from .explore_reduce import canonical, pointless

PathKey = tuple[int, ...]
"""A path as the position of each step in its state's step list (``explore.steps_of``)."""


@dataclass(frozen=True)
class Search:
    """What every worker needs to know of the search (inherited through ``fork``)."""

    config: Config
    max_records: int
    faults: bool
    reduce: bool
    extra: Callable[[State, list[Step]], list[Step]] | None
    only: frozenset[str] | None
    workers: int
    collect: bool
    skip: bool
    """Whether steps that change nothing are not tried (``explore_reduce.pointless``)."""
    merge_outputs: bool = False
    """Whether states that differ only in their outputs are one (``explore``'s ``merge_outputs``)."""

    def steps(self, state: State) -> list[Step]:
        return steps_of(state, self.max_records, self.faults, self.extra, self.only)

    @functools.cached_property
    def _positions(self) -> dict[str | None, int]:
        """Each replica's position in the assignment (no leader: -1)."""
        return {None: -1, **{name: i for i, name in enumerate(self.config.replicas)}}

    def owner(self, key: State) -> int:
        """The worker that owns the states with this deduplication key. Any function of
        the key keeps deduplication exact; this one reads only what few steps change (the
        controller's leader and epoch, and how many records were produced: an election or
        a produce), so most successors stay with the worker that found them and are not
        pickled, and the leader is named by its position, not by its name's hash (which
        changes with the interpreter's hash seed, and with it how evenly the states
        split). Two replicas, diverging-epoch, to depth 7, two workers: 19 % of the
        search tree's edges cross to the other worker, and the larger share of the last
        level is 1.03 times an even one; by the leader's name, its epoch and each
        replica's LEO (before 2026-12-02): 17-19 % and 1.08-1.2 times, with the seed
        (docs/explore.md, "On several processes")."""
        ctrl = key.controller
        return hash((self._positions[ctrl.leader], ctrl.epoch, len(key.produces))) % self.workers

    def key(self, state: State) -> State:
        """The deduplication key of a state already without ``fired``."""
        return canonical(state) if self.reduce else state


def _log(base: int, records: tuple[Record, ...]) -> Log:
    return Log.starting_at(base, records)


def _history(key: Callable[[Any], Any] | None, items: tuple[Any, ...]) -> History[Any]:
    return History(key).extend(items)


def _reduce_log(log: Log) -> tuple[Any, ...]:
    base = min(log.base, log.end)
    return _log, (base, log.read(base, log.end))


def _reduce_history(history: History[Any]) -> tuple[Any, ...]:
    return _history, (history._key, tuple(history))


_REDUCERS = {Log: _reduce_log, History: _reduce_history}
"""How a log and a history are pickled for another worker: as their records and items.
Their own pickled form would carry what they share with every log or history they
descend from or met (a log buffer's agreement cache links it to other buffers, a
history's index holds every key any of its family appended): a batch of states would
carry the whole search."""


def dumps(value: Any) -> bytes:
    """``value`` pickled for another worker (``_REDUCERS``)."""
    out = io.BytesIO()
    pickler = pickle.Pickler(out, pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _REDUCERS  # type: ignore[assignment]
    pickler.dump(value)
    return out.getvalue()


def available() -> bool:
    """Whether worker processes can be forked here (they inherit the search and the
    interpreter's hash seed, which the owner of a state is computed with)."""
    return "fork" in multiprocessing.get_all_start_methods()


@dataclass
class LevelReport:
    """One worker's account of one level."""

    new: int
    transitions: int
    rules: Counter[str]
    findings: dict[str, tuple[PathKey, str]]
    """Per invariant, the least path key among the new states breaking it, and the detail."""
    cut: bool
    """The time budget ran out before this worker expanded its whole frontier."""
    spent: bool = False
    """The level is whole, but the budget ran out by the time it was exchanged: there is
    no next level (its frontier was not built)."""


@without_gc
def _worker(search: Search, me: int, conn: Connection, root: State) -> None:
    """One worker: owns the states whose key hashes to ``me`` modulo the worker count;
    answers the parent process level by level (``explore_parallel``'s protocol). The
    collector is paused for the worker's whole life, as for the sequential search."""
    n = search.workers
    reduce, skip, merge, owner_of, max_records, faults, extra, only = (
        search.reduce,
        search.skip,
        search.merge_outputs,
        search.owner,
        search.max_records,
        search.faults,
        search.extra,
        search.only,
    )
    seen: set[State] = set()
    shared = Shared()
    frontier: list[tuple[State, PathKey]] = []
    if search.owner(search.key(root)) == me:
        seen.add(search.key(root))
        frontier.append((root, ()))
    nodes: list[tuple[PathKey, State, Step]] = []
    # every key sent to its owner, at any level: the owner has seen it since (kept it or
    # had it), so it is never sent again; within a level the first arrival from here has
    # the least path key of those from here
    sent: set[State] = set()
    while True:
        order = conn.recv()
        if order is None:
            # The process ends here, its heap returned to the system at once: returning
            # would free every state it kept object by object (seconds for a million, past
            # the search's budget: the parent waits for the workers to end).
            conn.close()
            os._exit(0)
        if order == "tree":
            conn.send_bytes(dumps(nodes))
            continue
        deadline: float | None = order[1]  # ("level", deadline, last)
        last: bool = order[2]
        transitions = 0
        firings: dict[tuple[str, ...], int] = {}
        cut = False
        # key -> [path key, state, step, its violations]: a state's invariants are checked
        # where it is found, within the time budget (only the exchange comes after it)
        best: dict[State, list[Any]] = {}
        # per invariant, the least path key of a state found but not kept in ``best`` that
        # breaks it: an arrival whose outputs do (``drop_outputs``), or, on a level the budget
        # cut, a state bound for another worker
        aside: dict[str, tuple[PathKey, str]] = {}
        outgoing: list[list[tuple[PathKey, State, Step, list[tuple[str, str]]]]] = [[] for _ in range(n)]
        for count, (state, path) in enumerate(frontier):
            if deadline is not None and count % 32 == 0 and time.perf_counter() > deadline:
                cut = True
                break
            for i, step in enumerate(steps_of(state, max_records, faults, extra, only)):
                if skip and type(step) is IsrExpiration and pointless(state, step):  # (the only kind it skips)
                    continue
                after = transition(state, step, firings)
                transitions += 1
                if merge and (broken := drop_outputs(after)):
                    for v in broken:
                        here = (*path, i)
                        if v.invariant not in aside or here < aside[v.invariant][0]:
                            aside[v.invariant] = (here, v.detail)
                key = after
                k = canonical(key) if reduce else key
                if k in seen:
                    continue
                owner = owner_of(k)
                if owner == me:
                    # the frontier is in path-key order and steps in list order: the first
                    # arrival from here has the least path key of those from here
                    if k not in best:
                        shared(after, state)  # kept: one copy of each part (a state sent is pickled)
                        found = [(v.invariant, v.detail) for v in check(key, state)]
                        best[k] = [(*path, i), key, step, found]
                elif k not in sent:
                    sent.add(k)
                    found = [(v.invariant, v.detail) for v in check(key, state)]
                    outgoing[owner].append(((*path, i), key, step, found))
        if cut:
            # The budget ran out here: the level is the search's last and is not exchanged
            # (shipping and deduplicating it took 10 s and more past a 60 s budget with three
            # replicas). Its count is the states this worker owns and found; the invariants
            # are those broken on any state it found, checked where found.
            for batch in outgoing:
                for path, _, _, found in batch:
                    for invariant, detail in found:
                        if invariant not in aside or path < aside[invariant][0]:
                            aside[invariant] = (path, detail)
            outgoing = [[] for _ in range(n)]
        for owner in range(n):
            if owner != me:
                conn.send_bytes(dumps(outgoing[owner]))
        del outgoing
        for _ in range(n - 1):
            received = conn.recv_bytes()
            if cut:
                continue  # not counted here either: a lower bound, as the level is cut
            for path, key, step, found in pickle.loads(received):
                k = search.key(key)
                if k in seen:
                    continue
                mine = best.get(k)
                if mine is None or path < mine[0]:
                    best[k] = [path, key, step, found]
        findings: dict[str, tuple[PathKey, str]] = {}
        new = len(best)
        # out of time once the level is found and exchanged: the next level would be cut at
        # its first state, so its frontier is not built (ordering a million states took seconds)
        spent = not cut and deadline is not None and time.perf_counter() > deadline
        if (last or cut or spent) and not search.collect:
            # no next level (the last, or the budget ran out here): no frontier to order,
            # nothing to remember; the least path key breaking each invariant (keys of one
            # level have one length: compared in order)
            for path, _, _, found in best.values():
                for invariant, detail in found:
                    if invariant not in findings or path < findings[invariant][0]:
                        findings[invariant] = (path, detail)
            frontier = []
        else:
            winners = sorted(best.items(), key=lambda item: item[1][0])
            frontier = []
            for k, (path, key, step, found) in winners:
                seen.add(k)
                for invariant, detail in found:
                    if invariant not in findings:
                        findings[invariant] = (path, detail)
                frontier.append((key, path))
                if search.collect:
                    nodes.append((path, key, step))
        del best
        for invariant, (path, detail) in aside.items():
            if invariant not in findings or path < findings[invariant][0]:
                findings[invariant] = (path, detail)
        rules: Counter[str] = Counter()
        for fired, times in firings.items():
            for rule in fired:
                rules[rule] += times
        conn.send(LevelReport(new, transitions, rules, findings, cut, spent))


def explore_parallel(
    config: Config,
    depth: int,
    max_records: int,
    seconds: float | None,
    workers: int,
    faults: bool = False,
    reduce: bool = False,
    extra: Callable[[State, list[Step]], list[Step]] | None = None,
    only: frozenset[str] | None = None,
    collect: bool = False,
    skip: bool = False,
    merge_outputs: bool = False,
) -> tuple[Any, dict[State, tuple[State | None, Step | None]]]:
    """``explore.explore`` on ``workers`` processes (the module doc); returns the
    statistics and the search tree: the whole tree with ``collect``, otherwise the root
    and the findings' paths only."""

    started = time.perf_counter()
    deadline = None if seconds is None else started + seconds
    result = Exploration(config=config, depth_limit=depth, outputs_merged=merge_outputs)
    search = Search(config, max_records, faults, reduce, extra, only, workers, collect, skip, merge_outputs)
    expected = EXPECTED_VIOLATIONS.get(config.generation, frozenset())
    root = state_key(initial_state(config))
    first: dict[str, tuple[PathKey, str]] = {}
    for v in check(root):
        first.setdefault(v.invariant, ((), v.detail))
    result.states = 1
    context = multiprocessing.get_context("fork")
    conns: list[Connection] = []
    processes = []
    nodes: list[tuple[PathKey, State, Step]] = []
    try:
        for me in range(workers):
            mine, theirs = context.Pipe()
            process = context.Process(target=_worker, args=(search, me, theirs, root), daemon=True)
            process.start()
            theirs.close()
            conns.append(mine)
            processes.append(process)
        for level in range(1, depth + 1):
            for conn in conns:
                conn.send(("level", deadline, level == depth))
            # worker i sends one batch to each other worker, in worker order; relay them unread
            batches = [[conn.recv_bytes() for _ in range(workers - 1)] for conn in conns]
            for j, conn in enumerate(conns):
                for i in range(workers):
                    if i != j:
                        conn.send_bytes(batches[i][j if j < i else j - 1])
            del batches
            reports: list[LevelReport] = [conn.recv() for conn in conns]
            new = sum(r.new for r in reports)
            result.transitions += sum(r.transitions for r in reports)
            for r in reports:
                result.rules.update(r.rules)
                for invariant, (path, detail) in r.findings.items():
                    if invariant not in first or (len(path), path) < (len(first[invariant][0]), first[invariant][0]):
                        first[invariant] = (path, detail)
            if new:
                result.states += new
                result.depth_reached = level
                result.levels.append(new)
            if any(r.cut for r in reports):
                result.complete, result.stopped_at = False, level
                break
            if level < depth and any(r.spent for r in reports):
                result.complete, result.stopped_at = False, level + 1
                break
            if not new:
                break
        if collect:
            for conn in conns:
                conn.send("tree")
            for conn in conns:
                nodes += pickle.loads(conn.recv_bytes())
        for conn in conns:
            conn.send(None)
    except EOFError:
        raise RuntimeError("an explore worker process died (its error is above)") from None
    finally:
        for process in processes:
            process.join(timeout=5)
            if process.is_alive():
                process.terminate()
                process.join()
        for conn in conns:
            conn.close()
    result.seconds = time.perf_counter() - started
    parents: dict[State, tuple[State | None, Step | None]] = {root: (None, None)}
    if collect:
        at: dict[PathKey, State] = {(): root}
        for path, key, step in sorted(nodes, key=lambda node: (len(node[0]), node[0])):
            at[path] = key
            parents[key] = (at[path[:-1]], step)
    ordered = sorted(first.items(), key=lambda item: (len(item[1][0]), item[1][0]))
    for invariant, (path, detail) in ordered:
        steps = replay_path(search, root, path, parents)
        result.findings.append(Finding(invariant, detail, steps, invariant in expected))
    return result, parents


def replay_path(
    search: Search, root: State, path: PathKey, parents: dict[State, tuple[State | None, Step | None]]
) -> tuple[Step, ...]:
    """The steps a path key names, found by replaying it from the root (each state's step
    list names its steps); the states on the way are added to ``parents``."""
    state = root
    steps: list[Step] = []
    for i in path:
        step = search.steps(state)[i]
        after = state_key(apply(state, step))
        parents.setdefault(after, (state, step))
        steps.append(step)
        state = after
    return tuple(steps)


def search(
    config: Config,
    depth: int,
    max_records: int = 2,
    seconds: float | None = None,
    max_states: int | None = None,
    stop_on_finding: bool = False,
    faults: bool = False,
    reduce: bool | None = None,
    symmetry: bool = False,
    extra: Callable[[State, list[Step]], list[Step]] | None = None,
    only: frozenset[str] | None = None,
    workers: int = 1,
    tree: bool = True,
    merge_outputs: bool = False,
) -> tuple[Any, dict[State, tuple[State | None, Step | None]]]:
    """``explore.explore`` with ``workers``: more than one searches on that many forked
    processes (the same states, levels and witnesses; no sleep sets), unless ``max_states``,
    ``stop_on_finding`` or ``symmetry`` is asked for (they follow the sequential order) or
    processes cannot be forked; then the sequential search. ``tree``: whether the caller
    needs the whole search tree; without it a parallel search returns only the root and
    the findings' paths (sending every state back would cost as much as finding it).
    ``merge_outputs``: as ``explore``'s (for a search of the reference alone)."""
    if workers > 1 and max_states is None and not stop_on_finding and not symmetry and available():
        skip = reduce is not False  # as ``explore``: pointless steps tried only when reduce is False
        reduced = len(config.replicas) >= 3 if reduce is None else reduce
        return explore_parallel(
            config, depth, max_records, seconds, workers, faults, reduced, extra, only, tree, skip, merge_outputs
        )
    return explore(
        config,
        depth,
        max_records,
        seconds,
        max_states,
        stop_on_finding,
        faults,
        reduce,
        symmetry,
        extra,
        only,
        merge_outputs,
    )


__all__ = ["PathKey", "Search", "available", "explore_parallel", "search"]
