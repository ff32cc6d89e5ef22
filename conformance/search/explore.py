"""Bounded exhaustive exploration: every state the reference can reach, to a depth.

What TLC does for a TLA+ spec, done in Python for ours: breadth-first from the initial
state of one config, over every step ``enabled_steps`` offers (a small alphabet: a few tick
lengths, acks all/1, every replica's fetch, deliver, epoch request, crash, restart,
election), with at most ``max_records`` produces per path. States are deduplicated (two
paths reaching the same state continue as one), so the search covers every reachable
state to ``depth``, and each state is reached first by a shortest path.

On every new state the spec's invariants are checked, the transition invariants against the
state it was reached from. Under ``hw-truncation`` StrongIsr and AckedNotLost are expected to
break (KIP-101's data loss and divergence, spec section "Invariants"): they are reported as
findings with their shortest witness, not as faults of the spec.

Given an implementation (``replay``), every path that ends in a leaf of the search tree is
replayed on it from a reset, step by step, comparing its observations with the reference's:
the shortest disagreement becomes a witness fixture.

Searching the reference alone, states that differ only in their outputs (``OUTPUTS``: no
step reads them) may be held as one (``merge_outputs``): about a third fewer states.

The search can also run on several forked processes (``explore_parallel.search``):
the same states, levels and witnesses; on two idle cores 1.2-1.4 times faster for 1.4-1.6
times the CPU (``kconform explore`` uses the cores available, at most four; docs/explore.md,
"On several processes").
"""

from __future__ import annotations

import contextlib
import functools
import gc
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ParamSpec, TypeVar

from reference_impl import (
    Config,
    Generation,
    State,
    Step,
    StepRejected,
    apply,
    check,
    enabled_steps,
    initial_state,
    observe,
)
from reference_impl.generation import breaks_invariants
from reference_impl.invariants import Violation, consumer_below_hw
from reference_impl.steps import Crash, Elect, EpochQuery, IsrExpiration, Produce
from reference_impl.values import evolve

from ..adapters.base import Adapter, AdapterError, Description
from ..adapters.in_process import ReferenceAdapter
from ..adapters.wire import wire_step
from ..judging.compare import first_divergence
from ..judging.progress import FairSuffix, drive
from ..judging.runner import comparable, run_fixture
from ..judging.safety import Coverage, certificate
from .distribution import refused_steps
from .explore_reduce import SLEEPERS, canonical, followers_of, independent, pointless, symmetric_key
from .walk import walk, witness

REFUSED_DEPTH = 4
"""States up to this depth are offered the steps the reference refuses (``replay``); there
are about ten at each state, more than the enabled ones, so deeper they would dominate."""

EXPECTED_VIOLATIONS = {g: breaks_invariants(g.profile) for g in Generation if breaks_invariants(g.profile)}
"""Invariants a generation is known to break (spec/replication.md, "Invariants"), read from
its profile (``reference_impl.generation.breaks_invariants``)."""


@dataclass(frozen=True)
class Finding:
    """An invariant broken in a reachable state, with a shortest path to it."""

    invariant: str
    detail: str
    path: tuple[Step, ...]
    expected: bool
    """True when the generation is known to break this invariant (KIP-101 under hw-truncation)."""


@dataclass(frozen=True)
class Disagreement:
    """The implementation's observation differs from the reference's after ``path``."""

    path: tuple[Step, ...]
    field: str
    expected: Any
    actual: Any
    reason: str
    step: int = 0
    """The failing step's number, from 1 (past the path: a step of the fair suffix); 0 unknown."""


@dataclass
class Exploration:
    config: Config
    depth_limit: int
    states: int = 0
    transitions: int = 0
    depth_reached: int = 0
    complete: bool = True
    """False when the time or state budget ran out before the depth limit was covered."""
    stopped_at: int = 0
    """The level being searched when a budget stopped the search (0: none did)."""
    seconds: float = 0.0
    rules: Counter[str] = field(default_factory=Counter)
    """How many transitions fired each spec rule."""
    findings: list[Finding] = field(default_factory=list)
    """The first (shortest) violation of each invariant."""
    disagreement: Disagreement | None = None
    paths_replayed: int = 0
    """Root-to-leaf paths judged from a reset; for an in-process implementation, which is
    rewound instead, the transitions stepped."""
    levels: list[int] = field(default_factory=list)
    """New states found at each depth 1, 2, ... (the last one partial when ``complete`` is False)."""
    safety: dict[str, Coverage] = field(default_factory=dict)
    """Per safety property, over the paths judged by the engine: checked how often, what it lacked."""
    slept: int = 0
    """Transitions not taken because the other order of two independent steps reaches
    the same state (sleep sets, ``explore_reduce.independent``)."""
    rewound: bool = False
    """Judged by rewinding an in-process implementation along the tree (``_replay_rewinding``)."""
    outputs_merged: bool = False
    """States that differ only in their outputs were held as one (``merge_outputs``)."""
    paths_skipped: Counter[str] = field(default_factory=Counter)
    """Paths the implementation cannot run at all (nothing left after lowering, a field it
    does not honour), by reason."""

    def certificate(self) -> tuple[bool, str]:
        """Whether the replayed paths establish safety (``safety.certificate``). A rewound
        in-process implementation reports every field in the reference's form and is compared
        whole with the reference at every state, so what the reference is certified for
        (tests/test_safety.py) holds for it on the tree."""
        if self.rewound:
            return True, "safety established: every state compared whole with the reference's"
        return certificate([self.safety] if self.safety else [])

    @property
    def depth_completed(self) -> int:
        """The deepest level searched whole: every state that many steps from the start visited
        (the one before the level a budget stopped, even if that one found nothing yet)."""
        return self.depth_reached if self.complete else max(0, self.stopped_at - 1)

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds else 0.0

    @property
    def unexpected(self) -> list[Finding]:
        return [f for f in self.findings if not f.expected]


def state_key(state: State) -> State:
    """A state without what only describes the last step (``fired``): equal keys are the
    same state for everything that can happen next."""
    return evolve(state, fired=()) if state.fired else state


def alphabet(state: State, max_records: int, faults: bool = False) -> list[Step]:
    """The enabled steps, less ``epoch_query`` (a client's question changes nothing but its
    answer, so it cannot lead to a state the search does not reach otherwise); with
    ``faults``, also ``fault_steps``."""
    # left out before their preconditions are asked (``enabled_steps``'s ``leave_out``)
    steps = enabled_steps(state, _NO_QUERY if len(state.produces) < max_records else _NO_QUERY_NOR_PRODUCE)
    return steps + fault_steps(state, steps) if faults else steps


_NO_QUERY = frozenset({EpochQuery})
_NO_QUERY_NOR_PRODUCE = frozenset({EpochQuery, Produce})


def steps_of(
    state: State,
    max_records: int,
    faults: bool = False,
    extra: Callable[[State, list[Step]], list[Step]] | None = None,
    only: frozenset[str] | None = None,
) -> list[Step]:
    """The steps the search tries in ``state``, in a fixed order (``alphabet``, then
    ``extra``'s, kept to the kinds in ``only``): a step's position in this list names it
    (``explore_parallel`` names a path by its steps' positions)."""
    steps = alphabet(state, max_records, faults)
    if extra is not None:
        steps += extra(state, steps)
    if only is not None:
        steps = [s for s in steps if s.kind in only]
    return steps


def fault_steps(state: State, enabled: list[Step]) -> list[Step]:
    """Variants of the enabled elections and crashes the plain alphabet leaves out (the
    fuzzer draws them too): each election notifying every live broker but one (the other
    LeaderAndIsr stays in flight: stale epochs, fencing), and a crash of a broker with
    records that is a power failure losing its whole log (``unflushed_from: 0``: a
    checkpoint can then be ahead of the disk)."""
    live = [r.id for r in state.replicas if r.online]
    out: list[Step] = []
    for step in enabled:
        if isinstance(step, Elect) and step.notify is None and len(live) > 1:
            out += [replace(step, notify=tuple(r for r in live if r != left)) for left in live]
        elif isinstance(step, Crash) and step.unflushed_from is None and state.replica(step.replica).leo > 0:
            out.append(replace(step, unflushed_from=0))
    return out


P = ParamSpec("P")
R = TypeVar("R")


def without_gc(function: Callable[P, R]) -> Callable[P, R]:
    """``function`` run with Python's cyclic garbage collector paused (and resumed after,
    if it was on). A search keeps every state it reaches, millions of objects, and the
    collector rescanned them all again and again: a quarter of the search's CPU time
    (two replicas, depth 6: 7.1-7.8 s with it, 5.5-6.1 s without). States are trees of
    immutable values: a search leaves no cycles behind for the collector to find (a
    collection right after one found nothing), and any it did would be found once the
    collector is back on."""

    @functools.wraps(function)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        was = gc.isenabled()
        gc.disable()
        try:
            return function(*args, **kwargs)
        finally:
            if was:
                gc.enable()

    return paused


def transition(state: State, step: Step, firings: dict[tuple[str, ...], int]) -> State:
    """``apply(state, step)`` for a search: the rules it fired are counted per tuple in
    ``firings`` and emptied in place, so the new state is its own key (``state_key`` would
    copy it). ``after`` is the fresh state ``apply`` just built, held by nothing else. A
    refusal is a spec bug: ``enabled_steps`` said the step was enabled.

    Not paused here: the whole search is (``without_gc`` on ``explore`` and on a parallel
    worker). Paused around each ``apply`` only, the collector still ran between two, on
    the objects a transition, an invariant check or the tree's dict allocated, and
    rescanned the whole tree at each full collection (two replicas, leader-epoch, depth 6:
    7.2 s of CPU against 5.4-5.5 s with the search paused whole)."""
    try:
        after = apply(state, step)
    except StepRejected:
        raise AssertionError(f"enabled step {step} rejected by the reference") from None
    fired = after.fired
    if fired:
        firings[fired] = firings.get(fired, 0) + 1
        after.__dict__["fired"] = ()
    return after


def drop_outputs(state: State) -> list[Violation]:
    """Empty, in place, the outputs (``reference_impl.state.OUTPUTS``) of a state fresh from
    ``transition`` (held by nothing else; ``fired`` is empty already), after checking on it
    the one invariant that reads one: ConsumerBelowHw, on the read a ``consume`` just made.
    Returns its violations: they belong to this arrival even when the state without its
    outputs is known (``explore``'s ``merge_outputs``)."""
    d = state.__dict__
    found: list[Violation] = []
    if d["consumed"] is not None:
        found = consumer_below_hw(state)
        d["consumed"] = None
    if d["delivered"]:
        d["delivered"] = ()
    if d["epoch_query"] is not None:
        d["epoch_query"] = None
    return found


SHARED_FIELDS = (
    "controller",
    "fetch_responses",
    "parked_fetches",
    "epoch_responses",
    "leader_and_isr",
    "pending_produces",
    "produces",
    "committed",
    "alter_partitions",
)
"""The state fields besides ``replicas`` that ``Shared`` keeps one copy of per value."""


class Shared:
    """One object per value among the parts of a search's states (hash-consing): a replica,
    the controller's record or a message queue that two paths built alike becomes the same
    object. Exact (an equal value put in the place of another), and it pays twice: a state
    reached again is mostly compared by identity (the parts it shares with its parent are
    the known copies), and the tree holds each part once (two
    replicas, leader-epoch, depth 7: 370,576 states in 475 MB instead of 779; 6-14% less
    CPU at depth 7; docs/explore.md, "One copy of each part")."""

    def __init__(self) -> None:
        self.replicas: dict[Any, Any] = {}
        self.fields: dict[str, dict[Any, Any]] = {name: {} for name in SHARED_FIELDS}

    def __call__(self, after: State, before: State) -> None:
        """Put in ``after`` (fresh from ``apply``) the known copy of each part it does not
        share with ``before``. ``explore`` calls it once ``after`` is known to be new (where
        states are compared whole; where they are merged by a canonical form, before the
        form is made): more than half of a search's transitions reach a state it has
        already, and the equality that finds it does the comparisons this would have done
        (two replicas, depth 7: 0.4-13 % less CPU than sharing first, about 2 % at depth
        8; docs/explore.md, "Issue 22, the seventh session"). ``after`` may then be a key
        of the search's dict already: each part is replaced by an equal value, so its hash
        and equality stay what they were."""
        new, old = after.__dict__, before.__dict__
        replicas = new["replicas"]
        if replicas is not old["replicas"]:
            known = self.replicas
            new["replicas"] = tuple([known.setdefault(r, r) for r in replicas])
        for name, known in self.fields.items():
            value = new[name]
            if value is not old[name]:
                new[name] = known.setdefault(value, value)


@without_gc
def explore(
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
    merge_outputs: bool = False,
) -> tuple[Exploration, dict[State, tuple[State | None, Step | None]]]:
    """Breadth-first search to ``depth``; returns the statistics and the search tree
    (each state's parent and the step from it), for path reconstruction and replay.

    ``stop_on_finding`` ends the search at the first invariant violation, as TLC does.
    ``faults``: elections notifying only some brokers and power failures too (``fault_steps``).
    ``reduce``: states deduplicated up to the order of messages to different destinations,
    steps that change nothing not tried, sleep sets (``explore_reduce``: exact); None (the
    default): with three replicas or more, where it pays (with two, messages to different
    followers cannot interleave and its bookkeeping costs more than the transitions it saves:
    docs/explore.md), and with two only the steps that change nothing not tried (14% of the
    transitions, for a cheap test per step; False tries them too). ``symmetry``: also
    up to renaming the followers (``explore_reduce.symmetric_key``: an under-approximation,
    off by default). ``extra``: more steps to try in a state, given its alphabet
    (``explore_alphabet.Richer``). ``only``: the step kinds kept (a narrower alphabet
    that goes deeper). The tree holds real states, reached by real paths.

    ``merge_outputs``: states that differ only in their outputs (what the last step fired and
    delivered, the last consumer read and ``epoch_query`` answer: ``OUTPUTS``, which no step
    reads) are held as one, their outputs emptied (``drop_outputs``): exact for the
    reference (the same states up to outputs, the same invariants broken at the same
    depths; ConsumerBelowHw checked on every ``consume``'s read), and about a third fewer
    states. For a search of the reference alone: a tree to replay an implementation on
    keeps them (its every answer is judged; a read that changes nothing else would be a
    self-loop, never replayed).

    ``explore_parallel.search`` runs the same search on several forked processes.
    """
    # pointless steps (self-loops) are not tried unless ``reduce`` is False
    skip = reduce is not False
    if reduce is None:
        reduce = len(config.replicas) >= 3
    started = time.perf_counter()
    result = Exploration(config=config, depth_limit=depth, outputs_merged=merge_outputs)
    expected = EXPECTED_VIOLATIONS.get(config.generation, frozenset())
    root = state_key(initial_state(config))
    parents: dict[State, tuple[State | None, Step | None]] = {root: (None, None)}
    seen_invariants: set[str] = set()

    def plain(state: State) -> State:
        return state

    keyed: Callable[[State], State] = plain
    if symmetry:
        keyed = lambda state: symmetric_key(state, followers_of(state))  # noqa: E731
    elif reduce:
        keyed = canonical
    merged = keyed is not plain
    # merged: each class's key -> the depth it was first reached at
    known: dict[State, int] = {keyed(root): 0} if merged else {}

    def record(state: State, violations: list[Any]) -> None:
        for v in violations:
            if v.invariant not in seen_invariants:
                seen_invariants.add(v.invariant)
                path = path_to(parents, state)
                result.findings.append(Finding(v.invariant, v.detail, path, v.invariant in expected))

    def record_arrival(state: State, step: Step, violations: list[Any]) -> None:
        """``record`` for an arrival from ``state`` by ``step`` (its output's violations)."""
        for v in violations:
            if v.invariant not in seen_invariants:
                seen_invariants.add(v.invariant)
                path = (*path_to(parents, state), step)
                result.findings.append(Finding(v.invariant, v.detail, path, v.invariant in expected))

    record(root, check(root))
    shared = Shared()
    frontier: list[tuple[State, State | None]] = [(root, None)]
    result.states = 1
    nothing: frozenset[Step] = frozenset()
    # how many transitions fired each tuple of rules (counted per rule at the end: one dict
    # update per transition instead of a Counter.update)
    firings: dict[tuple[str, ...], int] = {}
    # Sleep sets (explore_reduce.independent): the steps a state need not take, by its key.
    sleeping: dict[State, frozenset[Step]] = {}
    for level in range(1, depth + 1):
        next_frontier: list[tuple[State, State | None]] = []
        next_sleeping: dict[State, frozenset[Step]] = {}
        for state, mine in frontier:
            # before each state, so that a level whose every state was expanded is complete
            if seconds is not None and time.perf_counter() - started > seconds:
                result.complete, result.stopped_at = False, level
                break
            steps = steps_of(state, max_records, faults, extra, only)
            asleep = sleeping.get(mine, nothing) if mine is not None and sleeping else nothing
            done: list[Step] = []
            for step in steps:
                if asleep and step in asleep:
                    result.slept += 1
                    continue
                if skip and type(step) is IsrExpiration and pointless(state, step):  # (the only kind it skips)
                    continue
                after = transition(state, step, firings)
                result.transitions += 1
                if merge_outputs and (read := drop_outputs(after)):
                    record_arrival(state, step, read)
                    if stop_on_finding:
                        result.complete, result.stopped_at = False, level
                        break
                key = after
                k: State | None = None
                if not merged:
                    # one lookup for the test and the insertion: the new entry, or a known state's
                    arrival = (state, step)
                    if parents.setdefault(key, arrival) is not arrival:
                        continue
                    shared(after, state)
                else:
                    shared(after, state)
                    k = keyed(key)
                    # taken from here after ``step``, each of these reaches what taking it first
                    # then ``step`` reached (both orders give one state)
                    quiet = (
                        # (only two steps of one class can be independent: ``independent``)
                        frozenset(b for b in done if type(b) is kind and independent(step, b))
                        if done and isinstance(step, SLEEPERS) and (kind := type(step))
                        else nothing
                    )
                    if reduce:
                        done.append(step)
                    # one lookup for the test and the insertion (a key's hash is a Python call)
                    classes = len(known)
                    first = known.setdefault(k, level)
                    if len(known) == classes:  # known before this transition
                        if first == level and k in next_sleeping:  # reached again at this depth
                            next_sleeping[k] &= quiet
                        continue
                    if quiet:
                        next_sleeping[k] = quiet
                    parents[key] = (state, step)
                result.states += 1
                next_frontier.append((key, k))
                # checked on ``key``, not ``after`` (no invariant reads ``fired``): the result
                # is the same, and the memo it leaves on ``key`` makes its children's check
                # incremental (``invariants.check``)
                violations = check(key, state)
                if violations:
                    record(key, violations)
                if (max_states is not None and result.states >= max_states) or (stop_on_finding and result.findings):
                    result.complete, result.stopped_at = False, level
                    break
            if not result.complete:
                break
        if next_frontier:
            result.depth_reached = level
            result.levels.append(len(next_frontier))
        frontier = next_frontier
        sleeping = next_sleeping
        if not result.complete or not frontier:
            break
    for rules, n in firings.items():
        for rule in rules:
            result.rules[rule] += n
    result.seconds = time.perf_counter() - started
    return result, parents


def path_to(parents: dict[State, tuple[State | None, Step | None]], state: State) -> tuple[Step, ...]:
    steps: list[Step] = []
    node: State | None = state
    while node is not None:
        parent, step = parents[node]
        if step is not None:
            steps.append(step)
        node = parent
    return tuple(reversed(steps))


def leaf_paths(parents: dict[State, tuple[State | None, Step | None]]) -> Iterator[tuple[Step, ...]]:
    """Every root-to-leaf path of the search tree, shortest first: together they cover
    every explored state and transition of the tree."""
    has_child = {parent for parent, _ in parents.values() if parent is not None}
    leaves = [s for s in parents if s not in has_child]
    yield from sorted((path_to(parents, leaf) for leaf in leaves), key=len)


def replay(
    adapter: Adapter,
    config: Config,
    parents: dict[State, tuple[State | None, Step | None]],
    result: Exploration,
    on_path: Callable[[int], None] | None = None,
    first: bool = False,
    tree: Edges | None = None,
    level: str = "exact",
    known: Mapping[str, str] | None = None,
    progress: bool = True,
) -> Disagreement | None:
    """Replay every leaf path on ``adapter``, each judged at ``level`` by the one engine (the
    path as a fixture expecting the reference's observation after every step, ``walk.py``,
    through ``runner.run_fixture``: conventions, role fields, coarsening, settled and safety
    exactly as ``kconform run``); keep the shortest disagreement (the path up to its first
    failing step). The engine stops a path at its first failing step; once a disagreement
    of ``n`` steps is known, the paths left are replayed only to ``n - 1`` steps, each
    distinct prefix once (a disagreement below a killed prefix cannot be shorter).
    ``first``: stop at the first disagreement (a kill is enough: ``kconform sensitivity``).
    ``tree``: ``edges(parents)``, if already computed.

    An in-process implementation whose state is a value and that reports every field in the
    reference's form (the reference, a zoo member) is judged at ``exact`` by rewinding it
    along the tree instead (``_replay_rewinding``): the same verdicts
    (``tests/test_one_judge.py``), one step per state instead of one per step of every path."""
    description = adapter.describe()
    if level == "exact" and not known and isinstance(adapter, ReferenceAdapter) and _plain(description):
        result.rewound = True
        best = _replay_rewinding(adapter, config, parents, result, first, tree=tree, progress=progress)
        result.disagreement = best
        return best
    best = None
    cut: set[tuple[Step, ...]] = set()
    for path in leaf_paths(parents):
        if best is not None:
            # only a shorter disagreement can improve on ``best``: replay each path only up to
            # one step before it, and each such prefix once (the engine still judges it whole,
            # with its fair suffix: a real path from the initial state)
            path = path[: len(best.path) - 1]
            if not path or path in cut:
                continue
            cut.add(path)
        found = _replay_one(adapter, description, config, path, level, result, known, progress)
        if on_path is not None:
            on_path(result.paths_replayed)
        if found is not None and (best is None or len(found.path) < len(best.path)):
            best = found
            if first:
                break
    result.disagreement = best
    return best


def _plain(description: Description) -> bool:
    """Reports every step kind and field in the reference's own form."""
    from reference_impl import STEP_TYPES

    return (
        not description.conventions
        and not description.role_fields
        and not description.step_fields
        and set(description.steps) >= set(STEP_TYPES)
    )


def _replay_rewinding(
    adapter: ReferenceAdapter,
    config: Config,
    parents: dict[State, tuple[State | None, Step | None]],
    result: Exploration,
    first: bool,
    refused: bool = True,
    tree: Edges | None = None,
    progress: bool = True,
) -> Disagreement | None:
    """``replay`` for an in-process implementation whose state is an immutable value: the
    search tree breadth-first, each edge stepped once from the implementation's state at
    its parent (put back), not each path from a reset. Finds the same shortest
    disagreement as replaying every leaf path, with one step per state instead of one per
    step of every path. Being cheap to rewind, the implementation is also offered, at each
    state fewer than ``REFUSED_DEPTH`` steps deep, the candidate steps the reference refuses
    (``refused``): it must refuse them too."""
    description = adapter.describe()
    supported = set(description.steps)
    root, children = tree if tree is not None else edges(parents)
    if root is None:
        return None
    try:
        adapter.reset(config.to_dict())
    except AdapterError as exc:
        return Disagreement((), "(reset)", "accepted", exc.message, f"reset failed: {exc.message}")
    level: list[tuple[State, State | None, tuple[Step, ...]]] = [(root, adapter.state, ())]
    advance = _advancer(adapter)
    best: Disagreement | None = None
    while level and best is None:
        following: list[tuple[State, State | None, tuple[Step, ...]]] = []
        for node, mine, path in level:
            if progress and mine is not None and id(node) not in children:
                found = _leaf_progress(adapter, description, config, mine, path)
                if found is not None:
                    best = found
                    if first:
                        return best
                    break
            for step in refused_steps(node) if refused and len(path) < REFUSED_DEPTH else ():
                if step.kind not in supported:
                    continue
                if advance is not None and mine is not None:
                    try:
                        advance(mine, step)
                        performed = True
                    except StepRejected:
                        performed = False
                else:
                    adapter.state = mine
                    try:
                        answer = adapter.step(wire_step(step, len(node.produces)))
                    except AdapterError:
                        answer = None
                    performed = answer is not None and answer.rejected is None
                if performed:
                    best = Disagreement(
                        (*path, step),
                        "(refused)",
                        "rejected",
                        "accepted",
                        f"{step.kind}: the reference refuses it, the implementation performs it",
                    )
                    break
            if best is not None:
                if first:
                    return best
                break
            for step, child in children.get(id(node), ()):
                if step.kind not in supported:
                    continue
                done = (*path, step)
                result.paths_replayed += 1
                if advance is not None and mine is not None:
                    found = _advance_one(advance, description, mine, step, child, done, following)
                else:
                    found = _step_one(adapter, description, mine, node, step, child, done, following)
                if found is None:
                    continue
                best = found  # the first at the shallowest depth: a shortest one
                if first:
                    return best
                break
            if best is not None:
                break
        level = following
    return best


def _leaf_progress(
    adapter: ReferenceAdapter, description: Description, config: Config, mine: State, path: tuple[Step, ...]
) -> Disagreement | None:
    """At a leaf of the tree, the fair suffix from the implementation's state there (put
    back), as the engine ends every path (``judge``'s ``progress``); its first finding."""
    adapter.state = mine
    suffix = FairSuffix.for_implementation(config, description)
    outcome = drive(adapter.step, suffix, observe(mine))
    if not outcome.findings:
        return None
    finding = outcome.findings[0]
    reason = f"{finding.property}: {finding.detail} (after {outcome.rounds} of {outcome.bound} fair rounds)"
    return Disagreement(path, finding.property, "holds", finding.detail, reason, len(path) + outcome.steps)


Advance = Callable[[State, Step], State]


def _advancer(adapter: Adapter) -> Advance | None:
    """How to move an in-process implementation's state without observing it: a zoo
    member's ``advance``, the reference's ``apply``; None for any other implementation."""
    advance = getattr(adapter, "advance", None)
    if callable(advance):
        return advance  # type: ignore[no-any-return]
    return apply if type(adapter) is ReferenceAdapter else None


Level = list[tuple[State, State | None, tuple[Step, ...]]]


def _advance_one(
    advance: Advance, description: Any, mine: State, step: Step, child: State, done: tuple[Step, ...], following: Level
) -> Disagreement | None:
    """One edge of the tree on an implementation moved by ``advance``: its state is
    compared with the reference's, and the observations only where the states differ."""
    try:
        after = advance(mine, step)
    except StepRejected as exc:
        return Disagreement(done, "(step)", "accepted", f"rejected: {exc.reason}", "rejected an enabled step")
    if state_key(after) != child:
        diff = first_divergence(comparable(observe(child), description), observe(after))
        if diff is not None:
            reason = f"{diff.path}: reference {diff.expected!r}, implementation {diff.actual!r}"
            return Disagreement(done, diff.path, diff.expected, diff.actual, reason)
    following.append((child, after, done))
    return None


def _step_one(
    adapter: ReferenceAdapter,
    description: Any,
    mine: State | None,
    node: State,
    step: Step,
    child: State,
    done: tuple[Step, ...],
    following: Level,
) -> Disagreement | None:
    """One edge of the tree through the adapter's ``step`` (from its state put back)."""
    adapter.state = mine
    try:
        answer = adapter.step(wire_step(step, len(node.produces)))
    except AdapterError as exc:
        return Disagreement(done, "(step)", "an observation", exc.message, f"the implementation failed: {exc.message}")
    if answer.rejected is not None:
        return Disagreement(done, "(step)", "accepted", f"rejected: {answer.rejected}", "rejected an enabled step")
    expected = comparable(observe(child), description)
    diff = first_divergence(expected, answer.observation or {})
    if diff is None:
        following.append((child, adapter.state, done))
        return None
    reason = f"{diff.path}: reference {diff.expected!r}, implementation {diff.actual!r}"
    return Disagreement(done, diff.path, diff.expected, diff.actual, reason)


Edges = tuple[State | None, dict[int, list[tuple[Step, State]]]]
"""A search tree as its root and each state's outgoing edges, by the state's ``id`` (the
tree keeps every state alive; hashing a state is what costs)."""


def edges(parents: dict[State, tuple[State | None, Step | None]]) -> Edges:
    """``parents`` turned around, for replaying the tree from its root (``replay``: compute
    once, give to each implementation replayed on the same tree)."""
    children: dict[int, list[tuple[Step, State]]] = {}
    root = None
    for child, (parent, step) in parents.items():
        if parent is None or step is None:
            root = child
        else:
            children.setdefault(id(parent), []).append((step, child))
    return root, children


def _replay_one(
    adapter: Adapter,
    description: Description,
    config: Config,
    path: tuple[Step, ...],
    level: str,
    result: Exploration,
    known: Mapping[str, str] | None = None,
    progress: bool = True,
) -> Disagreement | None:
    """One leaf path judged by the one engine, ending with a fair suffix whose PROGRESS-*
    properties are checked (``progress``); its first failure at ``level``, if any."""
    walked = walk(config, path, "explore-path", source="kconform explore", group="explore")
    outcome = run_fixture(adapter, description, walked.fixture, description.name, walked.rules, level, known, progress)
    if outcome.outcome == "skipped":
        result.paths_skipped[outcome.reason] += 1
        return None
    result.paths_replayed += 1
    for pid, c in outcome.safety.items():
        seen = result.safety.get(pid)
        checked = int(c["checked"]) + (seen.checked if seen else 0)
        missing = tuple(sorted({*c["missing"], *(seen.missing if seen else ())}))
        result.safety[pid] = Coverage(checked, missing, bool(c["applicable"]) or bool(seen and seen.applicable))
    if outcome.outcome == "passed":
        return None
    if outcome.outcome == "errored":
        with contextlib.suppress(Exception):
            adapter.restart()
        upto = min(len(path), outcome.steps_run + 1)
        return Disagreement(path[:upto], "(step)", "an observation", outcome.reason, outcome.reason, upto)
    failure = outcome.divergence or {}
    number = int(failure.get("step") or len(path))
    field_ = str(failure.get("field", "(step)"))
    return Disagreement(
        path[:number],
        field_,
        failure.get("expected"),
        failure.get("actual"),
        f"step {number}: {outcome.reason}",
        number,
    )


def witness_fixture(config: Config, path: tuple[Step, ...], fixture_id: str, title: str, level: str = "exact") -> str:
    """A shortest path as a fixture for ``kconform run``: every step, the last one
    expecting the reference's whole observation (or, for a step the reference refuses,
    expecting the refusal)."""
    return witness(
        config,
        path,
        fixture_id,
        source="kconform explore (bounded exhaustive search, shortest path)",
        title=title,
        tags=["explore"],
        level=level,
    )
