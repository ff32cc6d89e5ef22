"""Trace validation for the ``settled`` level (Cirstea, Kuppe, Loillier, Merz, 2024:
"Validating Traces of Distributed Programs Against TLA+ Specifications").

The spec leaves some timing open: a parked fetch may be answered as soon as the leader
likes (``replica.fetch.wait.max.ms`` is an upper bound), and an implementation without
split steps receives an answer whenever it arrives. So instead of one reference state,
kconform keeps the *set* of reference states that the visible steps sent so far can reach
with up to ``INTERNAL_BOUND`` internal steps after each of them. Internal steps are:

- a parked fetch answered now (FETCH-PARK-3 before its deadline);
- an answer delivered now (``deliver_fetch``, ``deliver_epoch``, ``deliver_leader_and_isr``,
  ``deliver_alter_partition``),
  only for kinds the implementation cannot be sent (it does them by itself).

At a checkpoint the set keeps the states whose outcome fields match the implementation's
observation; none matching is a ``settled`` failure (the set is then left as it was, so the
run goes on). The set is capped at ``FRONTIER_CAP`` states, the plain reference path first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from reference_impl import State, Step, StepRejected, apply, observe
from reference_impl.steps import DeliverAlterPartition, DeliverEpoch, DeliverFetch, DeliverLeaderAndIsr, Tick

from .compare import first_divergence

INTERNAL_BOUND = 2
FRONTIER_CAP = 64


def answer_parked_now(state: State, follower: str | None = None) -> list[State]:
    """Each parked fetch (of ``follower``, or of anyone) completed at the current time, one
    successor per fetch.

    Done with the reference's own timer (the fetch's deadline moved to now, then ``tick 0``):
    the completion reads the records and the HW as FETCH-PARK-3 says. This is the one place
    outside ``reference_impl`` that reads the state's message fields (``State`` is public)."""
    out = []
    for parked in state.parked_fetches:
        if parked.deadline_ms <= state.clock_ms or (follower is not None and parked.follower != follower):
            continue
        moved = tuple(replace(p, deadline_ms=state.clock_ms) if p is parked else p for p in state.parked_fetches)
        try:
            out.append(apply(replace(state, parked_fetches=moved), Tick(0)))
        except StepRejected:
            continue
    return out


def _deliveries(state: State, lacking: frozenset[str]) -> list[State]:
    out = []
    candidates: list[Step] = []
    if "deliver_fetch" in lacking:
        candidates += [DeliverFetch(m.dst) for m in state.fetch_responses]
    if "deliver_epoch" in lacking:
        candidates += [DeliverEpoch(m.dst) for m in state.epoch_responses]
    if "deliver_leader_and_isr" in lacking:
        candidates += [DeliverLeaderAndIsr(m.dst) for m in state.leader_and_isr]
    if "deliver_alter_partition" in lacking:
        candidates += [DeliverAlterPartition(m.leader) for m in state.alter_partitions]
    for step in dict.fromkeys(candidates):
        try:
            out.append(apply(state, step))
        except StepRejected:
            continue
    return out


def internal_successors(state: State, lacking: frozenset[str]) -> list[State]:
    return answer_parked_now(state) + _deliveries(state, lacking)


class Frontier:
    """The reference states consistent with what the implementation showed so far.

    Lazy: ``step`` and ``keep`` are queued and computed only when a verdict needs the set
    (``match``, ``states``). A run whose every checkpoint matches the reference's own path
    never computes it: the set only decides something where an observation differs from
    the expectation, and then it is brought up to date by the same operations, in order."""

    def __init__(self, start: State, lacking: Iterable[str]) -> None:
        self.lacking = frozenset(lacking)
        self._start = start
        self._states: list[State] | None = None
        self._pending: list[tuple[Any, ...]] = []
        self._main: State | None = start
        """The reference's own state before the next step: its successor is given to
        ``step`` as ``main``, so it is not computed twice (a second computation would copy
        the logs and make every later comparison cost the log's length)."""

    @property
    def states(self) -> list[State]:
        """The set, brought up to date (the list itself: callers may add to it)."""
        return self._flush()

    def _expand(self, states: list[State]) -> list[State]:
        seen: dict[State, None] = dict.fromkeys(states)
        layer = list(states)
        for _ in range(INTERNAL_BOUND):
            nxt = []
            for s in layer:
                for t in internal_successors(s, self.lacking):
                    if t not in seen and len(seen) < FRONTIER_CAP:
                        seen[t] = None
                        nxt.append(t)
            layer = nxt
        return list(seen)

    def step(self, step: Step, main: State | Callable[[], State] | None, internal: bool = False) -> None:
        """Apply a visible step (or, ``internal``, one the implementation did by itself).
        ``main``: the reference's own state after it, or a function computing it (called
        only if the set is ever needed)."""
        self._pending.append(("step", step, main, internal))

    def include(self, state: State) -> None:
        """Add ``state`` to the set (first) if it is not there already."""
        self._pending.append(("include", state))

    def keep(
        self,
        expected: dict[str, Any] | Callable[[], dict[str, Any]],
        observed: dict[str, Any],
        when: Callable[[], bool] | None = None,
    ) -> None:
        """Keep the states that show ``observed`` on the fields ``expected`` names, where
        ``observed`` already equals ``expected`` there (so some state matches: no verdict
        to give, the filtering can wait). ``expected`` may be a function computing it, and
        ``when`` a condition decided at that point of the run: both are called only if the
        set is ever needed (the judge filters at quiescent points, on the settled fields;
        an empty expectation filters nothing)."""
        self._pending.append(("keep", expected, observed, when))

    def match(self, expected: dict[str, Any], observed: dict[str, Any]) -> bool:
        """Whether some state shows ``observed`` on the fields ``expected`` names; keep those."""
        self._flush()
        return self._filter(expected, observed)

    def _flush(self) -> list[State]:
        if self._states is None:
            self._states = self._expand([self._start])
        pending, self._pending = self._pending, []
        for kind, *args in pending:
            if kind == "step":
                self._step_now(*args)
            elif kind == "include":
                if args[0] not in self._states:
                    self._states.insert(0, args[0])
            elif args[2] is None or args[2]():
                expected = args[0]() if callable(args[0]) else args[0]
                if expected:
                    self._filter(expected, args[1])
        return self._states

    def _step_now(self, step: Step, main: State | Callable[[], State] | None, internal: bool) -> None:
        assert self._states is not None
        if main is not None and not isinstance(main, State):
            main = main()
        moved = []
        for s in self._states:
            if main is not None and s is self._main:
                moved.append(main)
                continue
            try:
                moved.append(apply(s, step))
            except StepRejected:
                continue
        if internal:
            moved += self._states  # it may have happened earlier, already
        if main is not None and main not in moved:
            moved.insert(0, main)
        self._main = main
        self._states = self._expand(list(dict.fromkeys(moved)))

    def _filter(self, expected: dict[str, Any], observed: dict[str, Any]) -> bool:
        assert self._states is not None
        keep = [s for s in self._states if first_divergence(_restrict(observe(s), expected), observed) is None]
        if keep:
            self._states = keep
            return True
        return False


def _restrict(obs: Any, shape: Any) -> Any:
    """``obs`` cut down to the keys of ``shape`` (both mappings, recursively)."""
    if isinstance(shape, dict) and isinstance(obs, dict):
        return {k: _restrict(obs.get(k), v) for k, v in shape.items() if k in obs}
    return obs
