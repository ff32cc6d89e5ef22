"""Trace validation for the ``settled`` level (Cirstea, Kuppe, Loillier, Merz, 2024:
"Validating Traces of Distributed Programs Against TLA+ Specifications"), over the spec's
choice points (spec/replication.md, "Choice points", CHOICE-1..8).

Kafka leaves some behaviour open: when a parked fetch is answered, which eligible replica is
elected, how many records an answer or a consumer read carries, when the ISR expiry check and
the HW checkpoint run. The reference takes Kafka's own resolution at each (its default); a
correct implementation may take another. So instead of one reference state, kconform keeps
the *set* of reference states that the visible steps sent so far can reach, where each
visible step may be resolved in any way its choice rule allows (``resolutions``) and is
followed by up to ``INTERNAL_BOUND`` internal steps (``internal``):

- CHOICE-1: a parked fetch answered now (FETCH-PARK-3 before its deadline), also inside a
  ``fetch_round``, whose early answer is then received in the same round;
- CHOICE-2: an answer delivered now (``deliver_fetch``, ``deliver_epoch``,
  ``deliver_leader_and_isr``, ``deliver_alter_partition``), only for kinds the
  implementation cannot be sent (it does them by itself);
- CHOICE-3: an ``elect`` electing another eligible replica than the first in assignment order;
- CHOICE-4: a fetch answer carrying fewer records (at least one) than are there to read;
- CHOICE-5: a consumer read returning fewer records (at least one) than are below the HW;
- CHOICE-6: the leader's ISR expiry check run now, as well as on its schedule;
- CHOICE-7: a restarting broker's checkpoint written later than its schedule (any HW it
  held since the last scheduled write);
- CHOICE-8: a restarting broker's raised log start checkpointed before its crash, earlier
  than its schedule (the restart keeps it).

Every state carries the choices assumed on its way (``Frontier.assumed`` reports those of the
surviving path that assumes least). A defect cannot hide behind a choice: each resolution is
the reference's own action with another admissible value, so an HW, a record, a leader or an
ISR no resolution produces still fails.

At a checkpoint the set keeps the states whose outcome fields match the implementation's
observation; none matching is a ``settled`` failure (the set is then left as it was, so the
run goes on). The set is capped at ``FRONTIER_CAP`` states, the reference's own path first.

Acceptance is judged the same way (``decide``): an implementation that refuses a step the
reference performs (or performs one it refuses) is not at fault if some state of the set
does the same, as after an early answer its ISR may legitimately differ when an ``elect``
comes. The set then keeps those states and leaves the reference's own path for good
(``detached``): later steps move only the states that agree with what was shown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from reference_impl import State, Step, StepRejected, apply, observe
from reference_impl.choices import (
    consume_at_most,
    cut_fetch_answer,
    elect_preferring,
    with_checkpoint,
    with_log_start_checkpoint,
)
from reference_impl.state import LEADER
from reference_impl.steps import (
    LOG_CHANGING_DELIVERIES,
    Consume,
    DeliverAlterPartition,
    DeliverEpoch,
    DeliverFetch,
    DeliverLeaderAndIsr,
    Elect,
    Fetch,
    FetchRound,
    IsrExpiration,
    Restart,
    Tick,
)

from .compare import Divergence, all_divergences, first_divergence

INTERNAL_BOUND = 4
"""Internal steps after each visible one. Raised from 2: one append completes the parked
fetches of every follower at once (FETCH-PARK-2), and an implementation without
``deliver_fetch`` receives all of those answers before its next step, so with five replicas
(the corpus generator's largest) four deliveries follow one produce (trace s1-124 of
``kconform generate --traces 2000 --seed 1`` under ``shape-round-only``)."""
FRONTIER_CAP = 4096
"""Raised from 64 with the choice points: a fetch answer may carry any number of its
records (CHOICE-4) and an election may pick any eligible replica (CHOICE-3), so the steps
between two checkpoints fan out: four answers of up to six records received before the
next quiescent point are up to 6^4 distinct states, each a follower at another offset
(``kconform fuzz --impl choice-fetch-one-record --generation hw-truncation --seed 1``
needs more than 1024). Past the cap the states found first are kept: the reference's own
path, then each resolution in the order ``resolutions`` and ``internal`` list them."""

SMALLER_ANSWERS = 8
"""CHOICE-4, -5: the shorter answers the frontier tries, 1 to this many records (besides the
whole answer); CHOICE-7: the checkpoint values it tries, this many counting down from the
HW the broker held at its crash. The rules allow any count from one; trying every count of a 100-record answer
on two followers before a checkpoint is 10^4 states (seed 12), so the frontier stops at
eight: an implementation whose answers carry between 9 records and all but one can be
reported where it is correct (docs/levels.md says so). One record per answer, the extreme,
is always tried."""

Why = tuple[str, ...]
"""The choices a state's path assumed: ``"CHOICE-n: what"`` each, in the order taken."""

CHOICES = {
    "CHOICE-1": "a parked fetch answered before replica.fetch.wait.max.ms",
    "CHOICE-2": "an answer received as soon as it arrived (no step to be sent it)",
    "CHOICE-3": "another eligible replica elected than the first in assignment order",
    "CHOICE-4": "a fetch answer carrying fewer of the records there were to read (at least one)",
    "CHOICE-5": "a consumer read returning fewer of the records below the HW (at least one)",
    "CHOICE-6": "the ISR expiry check run earlier than its replica.lag.time.max.ms / 2 schedule",
    "CHOICE-7": "the HW checkpoint written later than its scheduled run (before the crash)",
    "CHOICE-8": "a raised log start checkpointed earlier than its scheduled run (before the crash)",
}
"""The choice points the frontier resolves (spec/replication.md, "Choice points")."""


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


def deliveries(state: State, lacking: frozenset[str]) -> list[Step]:
    """The answers in flight in ``state`` that an implementation lacking the step kinds in
    ``lacking`` receives by itself (it has no step to be sent them): each as the delivery
    step the reference takes for it (fetch and epoch answers, LeaderAndIsr, AlterPartition).
    The one definition of CHOICE-2's internal steps: the frontier's, and the deliveries
    ``kconform fuzz`` adds to a run it draws for such an implementation."""
    out: list[Step] = []
    if "deliver_fetch" in lacking:
        out += [DeliverFetch(m.dst) for m in state.fetch_responses]
    if "deliver_epoch" in lacking:
        out += [DeliverEpoch(m.dst) for m in state.epoch_responses]
    if "deliver_leader_and_isr" in lacking:
        out += [DeliverLeaderAndIsr(m.dst) for m in state.leader_and_isr]
    if "deliver_alter_partition" in lacking:
        out += [DeliverAlterPartition(m.leader) for m in state.alter_partitions]
    return list(dict.fromkeys(out))


def _deliveries(state: State, lacking: frozenset[str]) -> list[State]:
    out = []
    for step in deliveries(state, lacking):
        try:
            out.append(apply(state, step))
        except StepRejected:
            continue
    return out


def _cut_deliveries(state: State, replica: str | None = None) -> list[tuple[State, str]]:
    """CHOICE-4 at delivery: the fetch answer to ``replica`` (or each in flight), with n > 1
    records, cut to 1..n-1 and delivered. Cut when it arrives rather than when it is made:
    nothing reads an answer before its delivery, and independent answers in flight then do
    not multiply the set before any of them is received."""
    out = []
    for index, answer in enumerate(state.fetch_responses):
        if replica is not None and answer.dst != replica:
            continue
        for keep in range(1, min(len(answer.records), SMALLER_ANSWERS + 1)):
            why = f"CHOICE-4: the fetch answer to {answer.dst} carried {keep} of {len(answer.records)} records"
            try:
                out.append((apply(cut_fetch_answer(state, index, keep), DeliverFetch(answer.dst)), why))
            except StepRejected:
                continue
        if replica is not None:
            break  # only the first answer to it is delivered
    return out


def _early_isr_check(state: State) -> list[tuple[State, str]]:
    """CHOICE-6: the current leader's ISR expiry check run now, where it drops someone."""
    leader_id = state.controller.leader
    if leader_id is None:
        return []
    leader = state.replica(leader_id)
    if not leader.online or leader.role is not LEADER:
        return []
    try:
        after = apply(state, IsrExpiration(leader_id))
    except StepRejected:
        return []
    if not any(rule in after.fired for rule in ("ISR-SHRINK-1", "ISR-SHRINK-2")):
        return []
    return [(after, f"CHOICE-6: {leader_id}'s ISR expiry check ran early, at {state.clock_ms} ms")]


def internal(state: State, lacking: frozenset[str], every: bool = True) -> list[tuple[State, str]]:
    """The internal steps from ``state``, each with the choice it assumes; only the timing
    ones (CHOICE-1, -2) unless ``every``."""
    out = [(t, "CHOICE-1: a parked fetch answered early") for t in answer_parked_now(state)]
    out += [(t, "CHOICE-2: an answer received as it arrived") for t in _deliveries(state, lacking)]
    if not every:
        return out
    if state.fetch_responses and "deliver_fetch" in lacking:
        out += _cut_deliveries(state)
    out += _early_isr_check(state)
    return out


def resolutions(state: State, step: Step, every: bool = True) -> list[tuple[State, str]]:
    """The non-default resolutions of a visible ``step`` from ``state`` (the default is
    ``apply``'s), each with the choice it assumes; refused ones are left out. Only the
    timing one (CHOICE-1 inside a round) unless ``every``."""
    out: list[tuple[State, str]] = []
    if isinstance(step, FetchRound):
        out += _answered_in_round(state, step)
    if not every:
        return out
    if isinstance(step, DeliverFetch):
        out += _cut_deliveries(state, step.replica)
    elif isinstance(step, FetchRound) and step.max_records is None:
        follower = state.replica(step.replica)
        leader_id = follower.leader
        available = state.replica(leader_id).leo - follower.leo if leader_id in state.config.position else 0
        for keep in range(1, min(available, SMALLER_ANSWERS + 1)):
            after = _attempt(apply, state, replace(step, max_records=keep))
            if after is not None:
                out.append((after, f"CHOICE-4: {step.replica}'s fetch read {keep} of {available} records"))
    elif isinstance(step, Elect) and step.leader is None:
        default = _attempt(apply, state, step)
        if default is None:
            return out
        for candidate in state.config.replicas:
            if candidate == default.controller.leader or not state.replica(candidate).online:
                continue
            after = _attempt(elect_preferring, state, step, candidate)
            if after is not None and after.controller.leader == candidate:
                out.append((after, f"CHOICE-3: elected {candidate} where Kafka elects {default.controller.leader}"))
    elif isinstance(step, Consume):
        default = _attempt(apply, state, step)
        n = len(default.consumed.records) if default is not None and default.consumed is not None else 0
        for keep in range(1, min(n, SMALLER_ANSWERS + 1)):
            after = _attempt(consume_at_most, state, step, keep)
            if after is not None:
                out.append((after, f"CHOICE-5: the read returned {keep} of {n} records"))
    elif isinstance(step, Restart):
        replica = state.replica(step.replica)
        for hw in range(replica.hw, max(replica.checkpoint_hw, replica.hw - SMALLER_ANSWERS), -1):
            after = _attempt(lambda s, h: apply(with_checkpoint(s, step.replica, h), step), state, hw)
            if after is not None:
                why = f"CHOICE-7: {step.replica}'s checkpoint held HW {hw}, written after its last scheduled run"
                out.append((after, why))
        if replica.unchecked_below:
            after = _attempt(lambda s: apply(with_log_start_checkpoint(s, step.replica), step), state)
            if after is not None:
                why = f"CHOICE-8: {step.replica}'s log start {replica.log_start} checkpointed before its crash"
                out.append((after, why))
    return out


def _attempt(action: Callable[..., State], *args: Any) -> State | None:
    """``action(*args)``, or None where the reference refuses it."""
    try:
        return action(*args)
    except StepRejected:
        return None


def _answered_in_round(state: State, step: FetchRound) -> list[tuple[State, str]]:
    """CHOICE-1 inside a ``fetch_round``: the fetch parked, answered at once, and the answer
    received in the same round (FETCH-ROUND-1: the round delivers an answer made at once)."""
    try:
        sent = apply(state, Fetch(step.replica, step.max_records, step.max_wait_ms))
    except StepRejected:
        return []
    out = []
    for answered in answer_parked_now(sent, step.replica):
        try:
            out.append(
                (
                    apply(answered, DeliverFetch(step.replica)),
                    f"CHOICE-1: {step.replica}'s fetch answered at once, within its round",
                )
            )
        except StepRejected:
            continue
    return out


def _ranked(found: dict[State, Why]) -> list[State]:
    """The states in the order found (the reference's own path first), cut at ``FRONTIER_CAP``."""
    return list(found)[:FRONTIER_CAP]


class Frontier:
    """The reference states consistent with what the implementation showed so far.

    Lazy: the operations (``step``, ``include``, ``refuse``, ``keep``) are logged and
    computed only when a verdict needs the set (``match``, ``decide``, ``states``). A run
    whose every checkpoint matches the reference's own path never computes it: the set only
    decides something where an observation differs from the expectation, and then it is
    brought up to date by the same operations, in order.

    Two tiers: the set is first built with the timing choices only (CHOICE-1, -2), which
    are cheap and explain most implementations; when a verdict fails there, it is rebuilt
    from the start with every choice point and the verdict asked again (``every``). The
    second set contains the first, so nothing matched before is lost."""

    def __init__(self, start: State, lacking: Iterable[str]) -> None:
        self.lacking = frozenset(lacking)
        self._start = start
        self._states: list[State] | None = None
        self._why: dict[State, Why] = {}
        """The choices each state of the set assumed on its way (none: Kafka's own path)."""
        self._needed: dict[str, None] = {}
        """The choices an observation could not be explained without, in the order needed
        (each checkpoint's least-assuming surviving state): the reference's own state is put
        back into the set after every step, so a later state alone would forget them."""
        self._log: list[tuple[Any, ...]] = []
        """Every operation so far, in order (a rebuild replays them)."""
        self._done = 0
        """How many operations of ``_log`` the set reflects."""
        self._main: State | None = start
        """The reference's own state before the next step: its successor is given to
        ``step`` as ``main``, so it is not computed twice (a second computation would copy
        the logs and make every later comparison cost the log's length)."""
        self.detached = False
        """The implementation accepted or refused a step where the reference's own path did
        the opposite (``decide``): that path is no longer in the set nor added back."""
        self.every = False
        """Whether the set branches over every choice point, not only the timing ones."""

    @property
    def states(self) -> list[State]:
        """The set, brought up to date (the list itself: callers may add to it)."""
        return self._flush()

    def assumed(self) -> list[str]:
        """The choices (``"CHOICE-n: what"``) the observations so far needed, in order: at
        each checkpoint those of the surviving state that assumes least; empty while the
        reference's own path (Kafka's defaults) explains everything shown. Brings the set up
        to date only if it was ever computed."""
        if self._states is not None:
            self._flush()
        return list(self._needed)

    def step(self, step: Step, main: State | Callable[[], State] | None, internal: bool = False) -> None:
        """Apply a visible step (or, ``internal``, one the implementation did by itself).
        ``main``: the reference's own state after it, or a function computing it (called
        only if the set is ever needed)."""
        self._log.append(("step", step, main, internal))

    def include(self, state: State) -> None:
        """Add ``state`` to the set (first) if it is not there already."""
        self._log.append(("include", state))

    def refuse(self, step: Step) -> None:
        """A step the implementation and the reference both refused: keep the states that
        refuse it too (the reference's own state among them)."""
        self._log.append(("refuse", step))

    def decide(self, step: Step, performed: bool) -> bool:
        """At a step the implementation ``performed`` (or refused) where the reference's own
        path did the opposite: whether some state of the set does the same; if so the set
        keeps those (moved by the step, in any of its resolutions, when performed) and is
        ``detached``. Otherwise the set is left as it was (a ``settled`` failure: the caller
        says so)."""
        self._flush()
        if not self._decide_now(step, performed) and not (self._widen() and self._decide_now(step, performed)):
            return False
        self._log.append(("decide", step, performed))
        self._done = len(self._log)
        return True

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
        self._log.append(("keep", expected, observed, when))

    def narrow(self, expected: dict[str, Any] | Callable[[], dict[str, Any]], observed: dict[str, Any]) -> None:
        """At a step that is not quiescent (no verdict there): keep the states whose replica
        logs and LEOs show ``observed`` on those ``expected`` names, when only visible steps
        can change a log, that is when the implementation receives every answer and
        LeaderAndIsr as a step of its own (``LOG_KINDS`` not lacking: the internal steps left,
        CHOICE-1 and -6, never touch a log). Sound pruning that keeps long stretches of
        answers in flight from growing the set past its cap; if no state matches, nothing is
        removed (the verdict comes at the next quiescent point)."""
        if not self.lacking & LOG_KINDS:
            self._log.append(("narrow", expected, observed))

    def match(self, expected: dict[str, Any], observed: dict[str, Any]) -> bool:
        """Whether some state shows ``observed`` on the fields ``expected`` names; keep those
        (with every choice point if the timing ones are not enough)."""
        self._flush()
        if self._filter(expected, observed):
            self._log.append(("keep", expected, observed, None))
            self._done = len(self._log)
            return True
        if self._widen() and self._filter(expected, observed):
            self._log.append(("keep", expected, observed, None))
            self._done = len(self._log)
            return True
        return False

    def nearest(self, expected: dict[str, Any], observed: dict[str, Any]) -> list[Divergence]:
        """Where ``observed`` differs, on the fields ``expected`` names, from the state of the
        set closest to it (fewest differing fields; the reference's own path first on a tie):
        what a ``settled`` failure reports, so a legal variation elsewhere (a follower one
        record behind under CHOICE-4) is not blamed for the defect. Leaves the set as it is."""
        best: list[Divergence] | None = None
        for s in self._flush():
            found = all_divergences(_restrict(observe(s), expected), observed)
            if best is None or len(found) < len(best):
                best = found
        return best or []

    def _widen(self) -> bool:
        """Rebuild the set from the start with every choice point; False if it had them."""
        if self.every:
            return False
        self.every = True
        self._states, self._why, self._needed = None, {}, {}
        self._main, self.detached, self._done = self._start, False, 0
        self._flush()
        return True

    def _flush(self) -> list[State]:
        if self._states is None:
            self._states = self._expand({self._start: ()})
        while self._done < len(self._log):
            kind, *args = self._log[self._done]
            self._done += 1
            if kind == "step":
                self._step_now(*args)
            elif kind == "include":
                if not self.detached and args[0] not in self._states:
                    self._states.insert(0, args[0])
                    self._why.setdefault(args[0], ())
            elif kind == "refuse":
                self._states = [s for s in self._states if _refuses(s, args[0])]
            elif kind == "decide":
                self._decide_now(*args)
            elif kind == "narrow":
                logs = _logs_of(args[0]() if callable(args[0]) else args[0])
                if logs:
                    self._filter(logs, args[1])
            elif args[2] is None or args[2]():
                expected = args[0]() if callable(args[0]) else args[0]
                if expected:
                    self._filter(expected, args[1])
        return self._states

    def _decide_now(self, step: Step, performed: bool) -> bool:
        assert self._states is not None
        agree: dict[State, Why] = {}
        for s in self._states:
            why = self._why.get(s, ())
            try:
                after = apply(s, step)
            except StepRejected:
                if not performed:
                    agree.setdefault(s, why)
                continue
            if performed:
                agree.setdefault(after, why)
                for t, choice in resolutions(s, step, self.every):
                    agree.setdefault(t, (*why, choice))
        if not agree:
            return False
        if performed:
            self._states = self._expand(agree)
        else:
            self._states, self._why = list(agree), agree
        self._main, self.detached = None, True
        return True

    def _expand(self, found: dict[State, Why]) -> list[State]:
        seen = dict(found)
        layer = list(found)
        for _ in range(INTERNAL_BOUND):
            nxt = []
            for s in layer:
                if len(seen) >= FRONTIER_CAP:
                    break
                for t, why in internal(s, self.lacking, self.every):
                    if t not in seen and len(seen) < FRONTIER_CAP:
                        seen[t] = (*seen[s], why)
                        nxt.append(t)
            layer = nxt
        self._why = seen
        return _ranked(seen)

    def _step_now(self, step: Step, main: State | Callable[[], State] | None, internal: bool) -> None:
        assert self._states is not None
        if main is not None and not isinstance(main, State):
            main = None if self.detached else main()  # detached: the reference's own path is not needed
        moved: dict[State, Why] = {}
        if main is not None and not self.detached:
            moved[main] = ()
        for s in self._states:
            why = self._why.get(s, ())
            if main is not None and s is self._main:
                moved.setdefault(main, why)
            else:
                after = _attempt(apply, s, step)
                if after is not None:
                    moved.setdefault(after, why)
            if not internal:
                for t, choice in resolutions(s, step, self.every):
                    moved.setdefault(t, (*why, choice))
        if internal:
            for s in self._states:  # it may have happened earlier, already
                moved.setdefault(s, self._why.get(s, ()))
        self._main = None if self.detached else main
        self._states = self._expand(moved)

    def _filter(self, expected: dict[str, Any], observed: dict[str, Any]) -> bool:
        assert self._states is not None
        keep = [s for s in self._states if first_divergence(_restrict(observe(s), expected), observed) is None]
        if keep:
            self._states = keep
            least: Why = min((self._why.get(s, ()) for s in keep), key=lambda why: len(why))
            self._needed.update(dict.fromkeys(least))
            return True
        return False


LOG_KINDS = LOG_CHANGING_DELIVERIES
"""The steps that change a follower's log; an implementation lacking none of them changes
logs only in steps the frontier is sent (``Frontier.narrow``)."""


def _logs_of(expected: dict[str, Any]) -> dict[str, Any]:
    """The replica ``log`` and ``leo`` fields of an expectation."""
    reps = expected.get("replicas")
    if not isinstance(reps, dict):
        return {}
    cut = {name: {f: v for f, v in fields.items() if f in ("log", "leo")} for name, fields in reps.items()}
    cut = {name: fields for name, fields in cut.items() if fields}
    return {"replicas": cut} if cut else {}


def _refuses(state: State, step: Step) -> bool:
    try:
        apply(state, step)
    except StepRejected:
        return True
    return False


def _restrict(obs: Any, shape: Any) -> Any:
    """``obs`` cut down to the keys of ``shape`` (both mappings, recursively)."""
    if isinstance(shape, dict) and isinstance(obs, dict):
        return {k: _restrict(obs.get(k), v) for k, v in shape.items() if k in obs}
    return obs
