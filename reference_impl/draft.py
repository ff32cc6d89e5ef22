"""``Draft``: the one scratch copy of a state that a step's actions work on.

``apply`` reads a ``State`` and must return one new ``State``. Building a fresh frozen
state after every small change (each fired rule, each replica update) cost 7 to 15
whole-state copies per step; instead ``apply`` opens a ``Draft`` of the input state,
the actions update the draft, and ``freeze`` turns it into the one new ``State``. A
draft lives only inside one ``apply`` call and never escapes it, so from outside the
model is still a pure function of immutable values: the input state is never touched
(the draft copies the lists it changes), and a rejected step simply drops its draft.

Replicas, the controller and every message stay immutable values; the draft only holds
which ones the state has now.
"""

from __future__ import annotations

from .config import Config
from .generation import Profile
from .history import History
from .messages import EpochResponse, FetchResponse, LeaderAndIsr, ParkedFetch, PendingProduce
from .state import ConsumeOutcome, Controller, ProduceOutcome, Replica, Role, State


class Draft:
    """The state being built by one step (see the module doc)."""

    __slots__ = (
        "clock_ms",
        "committed",
        "config",
        "consumed",
        "controller",
        "epoch_responses",
        "fetch_responses",
        "fired",
        "leader_and_isr",
        "parked_fetches",
        "pending_produces",
        "position",
        "power_failures",
        "produces",
        "profile",
        "replicas",
        "unclean_elections",
    )

    def __init__(self, state: State) -> None:
        config = state.config
        self.config: Config = config
        self.profile: Profile = config.profile
        self.position: dict[str, int] = config.position
        self.clock_ms: int = state.clock_ms
        self.replicas: list[Replica] = list(state.replicas)
        self.controller: Controller = state.controller
        self.fetch_responses: list[FetchResponse] = list(state.fetch_responses)
        self.parked_fetches: list[ParkedFetch] = list(state.parked_fetches)
        self.epoch_responses: list[EpochResponse] = list(state.epoch_responses)
        self.leader_and_isr: list[LeaderAndIsr] = list(state.leader_and_isr)
        self.pending_produces: list[PendingProduce] = list(state.pending_produces)
        self.produces: History[ProduceOutcome] = state.produces
        self.consumed: ConsumeOutcome | None = state.consumed
        self.unclean_elections: int = state.unclean_elections
        self.power_failures: int = state.power_failures
        self.committed: History[tuple[int, str, int]] = state.committed
        self.fired: list[str] = []

    def replica(self, replica_id: str) -> Replica:
        return self.replicas[self.position[replica_id]]

    def put(self, replica: Replica) -> None:
        """Replace the replica with ``replica.id`` by ``replica``."""
        self.replicas[self.position[replica.id]] = replica

    def fire(self, *rules: str) -> None:
        self.fired.extend(rules)

    def is_current_leader(self, replica: Replica) -> bool:
        """A live replica that believes it leads, in the epoch the controller has now."""
        ctrl = self.controller
        return (
            replica.online
            and replica.role is Role.LEADER
            and replica.leader_epoch == ctrl.epoch
            and ctrl.leader == replica.id
        )

    def freeze(self) -> State:
        """The new state (what the step leads to)."""
        state = object.__new__(State)
        state.__dict__.update(
            config=self.config,
            clock_ms=self.clock_ms,
            replicas=tuple(self.replicas),
            controller=self.controller,
            fetch_responses=tuple(self.fetch_responses),
            parked_fetches=tuple(self.parked_fetches),
            epoch_responses=tuple(self.epoch_responses),
            leader_and_isr=tuple(self.leader_and_isr),
            pending_produces=tuple(self.pending_produces),
            produces=self.produces,
            consumed=self.consumed,
            unclean_elections=self.unclean_elections,
            power_failures=self.power_failures,
            committed=self.committed,
            fired=tuple(self.fired),
        )
        return state
