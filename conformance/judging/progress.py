"""Progress, bounded: after the last fault, fair rounds bring the partition to rest.

The safety properties (``safety.py``) say nothing bad happens; none of them notices a
broker in which nothing good happens any more, e.g. a follower that answers every fetch
with nothing copied. ``FairSuffix`` is the end of a run that checks it (spec/replication.md,
"Progress", PROGRESS-*): after the run's last fault, no more faults (no crash, no restart,
no produce), and in rounds every live follower fetches once, answers in flight are
delivered, time passes for parked fetches, and the controller replaces an offline leader.
Within ``bound`` rounds (PROGRESS-BOUND) the partition must reach rest:

- ``PROGRESS-LEADER``: a leader leads when an eligible replica is alive;
- ``PROGRESS-ISR-CATCH-UP``: every live follower has the leader's LEO (in the ISR or not:
  a follower the leader dropped must come back, or a broker whose follower never copies
  would pass once the lag time dropped it);
- ``PROGRESS-ISR-JOIN``: every live follower is in the ISR;
- ``PROGRESS-HW``: the leader's HW is its LEO (unless HW-LEADER-3 freezes it, or a dead
  follower outside the ISR that counted as caught up holds it: HW-LEADER-1 recomputes
  nothing when time passes), and every live ISR follower reporting an HW has the leader's;
- ``PROGRESS-ACKS``: no acks=all produce still waits once the HW has passed every record.

It is a driver over observations, not over the reference's state: it decides each step
from what the implementation reports, so it runs on the implementation's own path (the
engine may run the reference beside it, or not). ``next_step(observation)`` returns the
next step in the wire form (every field spelled out, ``wire.py``), ``None`` when the suffix
is over; ``verdict()`` then lists the findings. It uses the step kinds the implementation
has (``fetch_round`` or ``fetch`` + ``deliver_fetch``, ``epoch_round`` or
``epoch_request`` + ``deliver_epoch``; a ``deliver_*`` kind it lacks is taken to happen by
itself). Observations must be normalised to the reference's conventions first
(``conventions.normalise``). A property whose fields the implementation does not report is
not checked, and says so (``unchecked``, ``missing``): it never passes silently.

Crashed replicas stay down: a restart is a fault-side event of the environment, as a crash
is, and the properties quantify over the replicas alive after the last fault (a replica
whose return the partition needs, e.g. the only eligible one, leaves the partition
offline, which PROGRESS-LEADER allows). Nor does the suffix produce: it completes what the
run started.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from reference_impl import Config
from reference_impl.steps import (
    DeliverAlterPartition,
    DeliverEpoch,
    DeliverFetch,
    DeliverLeaderAndIsr,
    Elect,
    EpochRequest,
    EpochRound,
    Fetch,
    FetchRound,
    Step,
    Tick,
)

from ..adapters.base import Description, StepResult
from ..adapters.wire import wire_step
from .safety import Finding

PROPERTIES: dict[str, str] = {
    "PROGRESS-LEADER": "when a live replica is eligible (a live ISR member, or any live replica with unclean "
    "election on), a live replica leads the controller's epoch",
    "PROGRESS-ISR-CATCH-UP": "every live follower (in the ISR or not) has the leader's LEO",
    "PROGRESS-ISR-JOIN": "every live follower is in the ISR",
    "PROGRESS-HW": "the leader's HW is its LEO (unless the committed ISR is under min.insync.replicas in "
    "diverging-epoch, HW-LEADER-3, or a replica outside the ISR is offline in leader-epoch and diverging-epoch: "
    "it may hold the HW as caught up, HW-LEADER-2), and every live ISR follower has the leader's HW",
    "PROGRESS-ACKS": "no acks=all produce is still pending once the leader's HW has reached its LEO",
}

NEEDS: dict[str, tuple[str, ...]] = {
    "PROGRESS-LEADER": ("leader", "isr", "replicas.online"),
    "PROGRESS-ISR-CATCH-UP": ("leader", "replicas.online", "replicas.leo"),
    "PROGRESS-ISR-JOIN": ("leader", "isr", "replicas.online"),
    "PROGRESS-HW": ("leader", "isr", "replicas.online", "replicas.leo", "replicas.hw"),
    "PROGRESS-ACKS": ("leader", "producer", "replicas.online", "replicas.leo", "replicas.hw"),
}
"""The observation fields each property reads (``replicas.X``: a per-replica field)."""

ROUND_BASE = 4
"""PROGRESS-BOUND: rounds for the election and its LeaderAndIsr, the fetch that copies,
the fetch that moves the leader's HW and the round that tells the followers that HW."""

_DEST = re.compile(r"^\S+->(\S+) ")
_SOURCE = re.compile(r"^(\S+)->")


def records_behind(obs: Mapping[str, Any]) -> int:
    """PROGRESS-BOUND's allowance for CHOICE-4: a fetch answer may carry a single record, so
    a follower the suffix finds ``n`` records behind the longest log may need ``n`` more
    rounds. The gap between the longest and the shortest reported log end (0 when the
    observation reports no LEO)."""
    replicas = obs.get("replicas")
    leos = [
        r.get("leo") for r in (replicas.values() if isinstance(replicas, Mapping) else ()) if isinstance(r, Mapping)
    ]
    ends = [x for x in leos if isinstance(x, int) and not isinstance(x, bool)]
    return max(ends) - min(ends) if ends else 0


def round_bound(replicas: int, leader_epoch: int) -> int:
    """PROGRESS-BOUND: ``ROUND_BASE + (leader_epoch + 3) + (replicas - 1)`` rounds.

    ``leader_epoch + 1`` epochs can be in the logs, and the suffix's own elections add at
    most two (CTRL-ELECT-3: leader none at E + 1, the next leader at E + 2): a follower
    needs at most one OffsetsForLeaderEpoch (KIP-279, TRUNC-EPOCH-3) or diverging fetch
    (FOLLOWER-DIVERGE-1) per epoch it holds above the common prefix, or one out-of-range
    answer (FOLLOWER-OOR-*); and under AlterPartition one ISR change is in flight at a time
    (ISR-ALTER-1), so up to ``replicas - 1`` followers rejoin one round after another."""
    return ROUND_BASE + (max(leader_epoch, 0) + 3) + max(replicas - 1, 0)


@dataclass(frozen=True)
class _View:
    """What one observation says, read once; None where the implementation does not report it."""

    obs: Mapping[str, Any]

    @property
    def leader(self) -> str | None:
        value = self.obs.get("leader")
        return value if isinstance(value, str) else None

    @property
    def isr(self) -> list[str]:
        value = self.obs.get("isr")
        return list(value) if isinstance(value, list) else []

    def replica(self, name: str) -> Mapping[str, Any]:
        replicas = self.obs.get("replicas")
        value = replicas.get(name) if isinstance(replicas, Mapping) else None
        return value if isinstance(value, Mapping) else {}

    def online(self, name: str) -> bool:
        return self.replica(name).get("online") is True

    def field(self, name: str, key: str) -> Any:
        return self.replica(name).get(key)

    def destinations(self, kind: str) -> set[str] | None:
        """Replicas with a message of ``kind`` in flight to them (``fetch_responses``,
        ``epoch_responses``, ``leader_and_isr``; ``alter_partitions``: the proposing leader;
        ``parked_fetches``: the parked follower); None when the observation does not say."""
        answers = self.obs.get("answers")
        if kind in ("fetch_responses", "parked_fetches", "epoch_responses") and isinstance(answers, Mapping):
            table = answers.get("epoch" if kind == "epoch_responses" else "fetch")
            if isinstance(table, Mapping):
                wanted = "parked" if kind == "parked_fetches" else "in_flight"
                return {r for r, a in table.items() if isinstance(a, Mapping) and a.get("status") == wanted}
        flight = self.obs.get("in_flight")
        lines = flight.get(kind) if isinstance(flight, Mapping) else None
        if not isinstance(lines, list):
            return None
        pattern = _SOURCE if kind in ("alter_partitions", "parked_fetches") else _DEST
        out: set[str] = set()
        for line in lines:
            match = pattern.match(line) if isinstance(line, str) else None
            if match is None:
                return None  # not the reference's one-line form: unknown
            out.add(match.group(1))
        return out


View = _View
"""What one observation says (public: the safety fuzzer's proposals read it too, ``own_path.py``)."""


def goals(config: Config, obs: Mapping[str, Any], checked: Iterable[str] = PROPERTIES) -> list[Finding]:
    """The PROGRESS-* properties that do not hold in ``obs`` (each with the replica and the
    values), among ``checked``."""
    view = _View(obs)
    wanted = set(checked)
    out: list[Finding] = []
    live = [r for r in config.replicas if view.online(r)]
    isr = view.isr
    eligible = [r for r in live if r in isr or config.unclean_leader_election]
    leader = view.leader
    leading = (
        leader is not None
        and view.online(leader)
        and view.field(leader, "role") in ("leader", None)
        and view.field(leader, "leader_epoch") in (obs.get("leader_epoch"), None)
    )
    if "PROGRESS-LEADER" in wanted and eligible and not leading:
        state = (
            "no leader"
            if leader is None
            else f"leader {leader} is offline"
            if not view.online(leader)
            else f"leader {leader} reports role {view.field(leader, 'role')!r}, "
            f"epoch {view.field(leader, 'leader_epoch')} (controller's {obs.get('leader_epoch')})"
        )
        out.append(Finding("PROGRESS-LEADER", f"{state} though {', '.join(eligible)} alive and eligible"))
    if not leading or leader is None:
        return out
    leo, hw = view.field(leader, "leo"), view.field(leader, "hw")
    alive = [r for r in live if r != leader]
    followers = [r for r in alive if r in isr]
    if "PROGRESS-ISR-CATCH-UP" in wanted and isinstance(leo, int):
        behind = [f"{r} leo {view.field(r, 'leo')}" for r in alive if view.field(r, "leo") != leo]
        if behind:
            detail = f"live followers {', '.join(behind)}; leader {leader} leo {leo}"
            out.append(Finding("PROGRESS-ISR-CATCH-UP", detail))
    if "PROGRESS-ISR-JOIN" in wanted:
        outside = [r for r in alive if r not in isr]
        if outside:
            out.append(Finding("PROGRESS-ISR-JOIN", f"live followers {', '.join(outside)} not in the ISR {isr}"))
    frozen = config.profile.hw_frozen_under_min_isr and len(isr) < config.min_insync_replicas
    # PROGRESS-HW, exempt: a follower that died caught up but outside the ISR may hold the HW
    # (HW-LEADER-2) until the next append, fetch or ISR change recomputes it (HW-LEADER-1)
    held = config.profile.hw_counts_caught_up and any(r not in isr and r not in live for r in config.replicas)
    if "PROGRESS-HW" in wanted and isinstance(hw, int) and isinstance(leo, int):
        if hw != leo and not frozen and not held:
            out.append(Finding("PROGRESS-HW", f"leader {leader} hw {hw}, leo {leo} (ISR {isr})"))
        stale = [f"{r} hw {view.field(r, 'hw')}" for r in followers if view.field(r, "hw") not in (hw, None)]
        if stale:
            out.append(Finding("PROGRESS-HW", f"ISR followers {', '.join(stale)}; leader {leader} hw {hw}"))
    producer = obs.get("producer")
    if "PROGRESS-ACKS" in wanted and isinstance(producer, Mapping) and hw == leo and isinstance(hw, int):
        waiting = sorted(str(p) for p, status in producer.items() if status == "pending")
        if waiting:
            out.append(
                Finding("PROGRESS-ACKS", f"{', '.join(waiting)} still pending; leader {leader} hw {hw} = leo {leo}")
            )
    return out


Answer = tuple[Mapping[str, Any] | None, bool]
"""What the suffix is told after each step: the observation (None if refused) and whether
the step was refused."""


class FairSuffix:
    """The fair suffix of one run (module doc; spec/replication.md, "Progress").

    ``kinds``: the step kinds the implementation performs; ``fields`` / ``replica_fields``:
    the observation fields it reports (default: assume every field, and learn from the
    observations what is absent). ``rounds``: override the bound (PROGRESS-BOUND)."""

    def __init__(
        self,
        config: Config,
        kinds: Iterable[str],
        fields: Iterable[str] | None = None,
        replica_fields: Iterable[str] | None = None,
        rounds: int | None = None,
    ) -> None:
        self.config = config
        self.kinds = frozenset(kinds)
        self.fields = None if fields is None else frozenset(fields)
        self.replica_fields = None if replica_fields is None else frozenset(replica_fields)
        self.fixed_bound = rounds
        self.bound = 0
        """The bound in rounds, set from the first observation (PROGRESS-BOUND)."""
        self.rounds = 0
        """Rounds started so far."""
        self.steps = 0
        """Steps returned so far."""
        self.done = False
        self.reached = False
        """The properties held at the end of a round (the suffix stopped early)."""
        self._last: Mapping[str, Any] = {}
        self._absent: set[str] = set()
        self._plan: Generator[Step, Answer, None] | None = None

    @classmethod
    def for_implementation(cls, config: Config, description: Description, rounds: int | None = None) -> FairSuffix:
        """The suffix for an implementation as it describes itself: its step kinds and the
        fields it reports."""
        return cls(config, description.steps, description.fields, description.replica_fields, rounds)

    # --- what can be checked ---------------------------------------------------------

    def _reported(self, path: str) -> bool:
        if path in self._absent:
            return False
        if path.startswith("replicas."):
            key = path.split(".", 1)[1]
            return (self.fields is None or "replicas" in self.fields) and (
                self.replica_fields is None or key in self.replica_fields
            )
        return self.fields is None or path in self.fields

    def _learn(self, obs: Mapping[str, Any]) -> None:
        """Note the fields this observation lacks (an implementation that reports less
        than it declares is not judged on what it leaves out)."""
        for name in ("leader", "isr", "producer", "leader_epoch"):
            if name not in obs:
                self._absent.add(name)
        replicas = obs.get("replicas")
        if not isinstance(replicas, Mapping):
            self._absent.add("replicas")
            return
        if any(isinstance(r, Mapping) and "online" not in r for r in replicas.values()):
            self._absent.add("replicas.online")
        leader = obs.get("leader")
        entry = replicas.get(leader) if isinstance(leader, str) else None
        if isinstance(entry, Mapping) and entry.get("online") is True:
            for key in ("leo", "hw"):
                if key not in entry:
                    self._absent.add(f"replicas.{key}")

    def missing_steps(self) -> tuple[str, ...]:
        """Step kinds the suffix needs and the implementation lacks."""
        out = []
        if not self.kinds & {"fetch", "fetch_round"}:
            out.append("step fetch_round (or fetch)")
        if "tick" not in self.kinds:
            out.append("step tick")
        if self.config.profile.asks_epoch_before_fetch and not self.kinds & {"epoch_round", "epoch_request"}:
            out.append("step epoch_round (or epoch_request)")
        offline = any(not _View(self._last).online(r) for r in self.config.replicas) if self._last else False
        if offline and "elect" not in self.kinds:
            out.append("step elect")
        return tuple(out)

    def unchecked(self) -> dict[str, tuple[str, ...]]:
        """Property -> what is missing to check it (fields not reported, steps lacking)."""
        steps = self.missing_steps()
        out: dict[str, tuple[str, ...]] = {}
        for prop, needs in NEEDS.items():
            lacking = (*(f"field {n}" for n in needs if not self._reported(n)), *steps)
            if lacking:
                out[prop] = lacking
        return out

    def missing(self) -> tuple[str, ...]:
        """Everything missing for some property (empty: every property is checked)."""
        return tuple(dict.fromkeys(m for lacking in self.unchecked().values() for m in lacking))

    def checked(self) -> tuple[str, ...]:
        """The properties ``verdict`` judges."""
        skipped = self.unchecked()
        return tuple(p for p in PROPERTIES if p not in skipped)

    # --- the driver --------------------------------------------------------------------

    def next_step(self, observation: Mapping[str, Any] | None, rejected: bool = False) -> dict[str, Any] | None:
        """The next step (wire form), given the observation after the previous one (the
        run's last observation on the first call); ``rejected``: the previous step was
        refused (``observation`` may then be None). None: the suffix is over."""
        if self.done:
            return None
        if observation is not None and not rejected:
            self._last = observation
            self._learn(observation)
        if self._plan is None:
            if not self._last:
                raise ValueError("FairSuffix.next_step: the first call needs the run's last observation")
            epoch = self._last.get("leader_epoch")
            self.bound = self.fixed_bound or round_bound(
                len(self.config.replicas), epoch if isinstance(epoch, int) else 0
            ) + records_behind(self._last)
            self._plan = self._rounds()
            step = next(self._plan, None)
        else:
            try:
                step = self._plan.send((observation, rejected))
            except StopIteration:
                step = None
        if step is None:
            self.done = True
            return None
        self.steps += 1
        return wire_step(step, 0)

    def verdict(self) -> list[Finding]:
        """The findings of the checked properties on the last observation (empty: progress
        held within the bound). Call it once ``next_step`` returned None."""
        if self.missing_steps():
            return []
        return goals(self.config, self._last, self.checked())

    @property
    def last(self) -> Mapping[str, Any]:
        """The last observation received."""
        return self._last

    # --- the rounds ----------------------------------------------------------------------

    def _view(self) -> _View:
        return _View(self._last)

    def _rounds(self) -> Generator[Step, Answer, None]:
        if self.missing_steps():
            return
        for number in range(1, self.bound + 1):
            self.rounds = number
            yield from self._one_round()
            if self._at_rest():
                self.reached = True
                return

    def _try(self, step: Step) -> Generator[Step, Answer, bool]:
        """Send ``step``; whether it was performed."""
        _, rejected = yield step
        return not rejected

    def _one_round(self) -> Generator[Step, Answer, None]:
        view = self._view()
        replicas = self.config.replicas
        parked = view.destinations("parked_fetches")
        if "tick" in self.kinds and (parked is None or parked):
            # FETCH-PARK-3: parked fetches complete at their deadline
            yield from self._try(Tick(self.config.replica_fetch_wait_max_ms))
        yield from self._deliver("fetch_responses", "deliver_fetch", DeliverFetch)
        yield from self._deliver("epoch_responses", "deliver_epoch", DeliverEpoch)
        if "elect" in self.kinds and self._needs_election():
            yield from self._try(Elect())
        yield from self._deliver("leader_and_isr", "deliver_leader_and_isr", DeliverLeaderAndIsr, repeat=4)
        yield from self._deliver("alter_partitions", "deliver_alter_partition", DeliverAlterPartition)
        for name in replicas:
            if self._follows(name):
                yield from self._exchange(name)
        yield from self._deliver("alter_partitions", "deliver_alter_partition", DeliverAlterPartition)

    def _deliver(
        self, kind: str, step_kind: str, make: Callable[[str], Step], repeat: int = 1
    ) -> Generator[Step, Answer, None]:
        """Deliver the messages of ``kind`` in flight (each replica with one; every live
        replica when the observation does not say), if the implementation has the step."""
        if step_kind not in self.kinds:
            return
        for name in self.config.replicas:
            for _ in range(repeat):
                targets = self._view().destinations(kind)
                if targets is None:
                    if not self._view().online(name) and kind != "alter_partitions":
                        break
                elif name not in targets:
                    break
                if not (yield from self._try(make(name))):
                    break

    def _needs_election(self) -> bool:
        """The controller has something to do (CTRL-ELECT-PRE-1 as far as observations show):
        no live leader, or a dead ISR member it would remove (CTRL-FAIL-1)."""
        view = self._view()
        leader = view.leader
        if leader is None or not view.online(leader):
            return True
        isr = view.isr
        return len(isr) > 1 and any(not view.online(r) for r in isr)

    def _follows(self, name: str) -> bool:
        view = self._view()
        leader = view.leader
        if name == leader or not view.online(name) or leader is None or not view.online(leader):
            return False
        role = view.field(name, "role")
        return role in ("follower", None)

    def _exchange(self, name: str) -> Generator[Step, Answer, None]:
        """One request of follower ``name`` and its answer: OffsetsForLeaderEpoch while it
        is truncating (LE), else a fetch; a parked fetch stays parked until the next tick."""
        view = self._view()
        state = view.field(name, "fetch_state")
        asks_epoch = self.config.profile.asks_epoch_before_fetch
        if asks_epoch and state == "truncating":
            yield from self._epoch(name)
            return
        if "fetch_round" in self.kinds:
            done = yield from self._try(FetchRound(name))
        else:
            done = yield from self._try(Fetch(name))
            if done and "deliver_fetch" in self.kinds:
                targets = self._view().destinations("fetch_responses")
                if targets is None or name in targets:
                    yield from self._try(DeliverFetch(name))
        if not done and asks_epoch and state is None:
            yield from self._epoch(name)  # fetch_state not reported: it may be truncating

    def _epoch(self, name: str) -> Generator[Step, Answer, None]:
        if "epoch_round" in self.kinds:
            yield from self._try(EpochRound(name))
        elif (
            "epoch_request" in self.kinds
            and (yield from self._try(EpochRequest(name)))
            and "deliver_epoch" in self.kinds
        ):
            yield from self._try(DeliverEpoch(name))

    def _at_rest(self) -> bool:
        """Every checked property holds and nothing but parked fetches is in flight."""
        if goals(self.config, self._last, self.checked()):
            return False
        view = self._view()
        for kind in ("fetch_responses", "epoch_responses", "leader_and_isr", "alter_partitions"):
            if view.destinations(kind):
                return False
        return True


@dataclass(frozen=True)
class Outcome:
    """A finished suffix: its findings, the rounds and steps it took, and what it could not check."""

    findings: tuple[Finding, ...]
    rounds: int
    bound: int
    steps: int
    unchecked: Mapping[str, tuple[str, ...]]
    last: Mapping[str, Any]
    """The observation the verdict was given on."""


def drive(step: Callable[[dict[str, Any]], StepResult], suffix: FairSuffix, observation: Mapping[str, Any]) -> Outcome:
    """Run ``suffix`` to its end through ``step`` (an adapter's ``step``), from the run's last
    ``observation``; the outcome. (An engine that judges each step against the reference
    feeds ``next_step`` itself instead.)"""
    request = suffix.next_step(observation)
    while request is not None:
        answer = step(request)
        request = suffix.next_step(answer.observation, rejected=answer.rejected is not None)
    return Outcome(tuple(suffix.verdict()), suffix.rounds, suffix.bound, suffix.steps, suffix.unchecked(), suffix.last)


def describe(outcome: Outcome) -> str:
    """One line per finding or unchecked property (empty when progress held)."""
    lines = [f"{f.property}: {f.detail} (after {outcome.rounds} of {outcome.bound} rounds)" for f in outcome.findings]
    lines += [f"{p}: not checkable ({', '.join(why)})" for p, why in outcome.unchecked.items()]
    return "\n".join(lines)
