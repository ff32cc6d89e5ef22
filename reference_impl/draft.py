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

Opening and freezing a draft is on every step's path, so neither copies field by field:
a draft starts from a copy of the state's attribute dict, and ``freeze`` turns the draft
object itself into the new ``State`` (its class becomes ``State``, which is frozen), so a
draft cannot be written to once frozen. The replicas are copied into a list only when
a step replaces one (``put``): a step that replaces none leaves the new state the very
same tuple, which tells ``invariants.check`` at once that no replica changed.
"""

from __future__ import annotations

from .config import Config
from .generation import Profile
from .history import History
from .messages import AlterPartition, Delivered, EpochResponse, FetchResponse, LeaderAndIsr, ParkedFetch, PendingProduce
from .state import LEADER, MEMO, ConsumeOutcome, Controller, EpochQueryOutcome, ProduceOutcome, Replica, State
from .values import HASH

_set = object.__setattr__


class Draft:
    """The state being built by one step (see the module doc).

    It has the ``State`` fields as attributes (``replicas`` the state's tuple until ``put``
    makes it a list; ``fired`` a list of
    the rules fired so far, which the actions append to directly: a method call per rule
    was a visible part of a step), plus ``profile`` and ``position`` from the config.
    """

    config: Config
    clock_ms: int
    replicas: list[Replica] | tuple[Replica, ...]
    controller: Controller
    fetch_responses: tuple[FetchResponse, ...]
    parked_fetches: tuple[ParkedFetch, ...]
    epoch_responses: tuple[EpochResponse, ...]
    leader_and_isr: tuple[LeaderAndIsr, ...]
    pending_produces: tuple[PendingProduce, ...]
    produces: History[ProduceOutcome]
    consumed: ConsumeOutcome | None
    unclean_elections: int
    power_failures: int
    power_lost_from: int | None
    committed: History[tuple[int, str, int]]
    fired: list[str]
    delivered: tuple[Delivered, ...]
    alter_partitions: tuple[AlterPartition, ...]
    fenced_proposals: tuple[AlterPartition, ...]
    epoch_query: EpochQueryOutcome | None

    profile: Profile
    position: dict[str, int]

    def __init__(self, state: State) -> None:
        _set(self, "__dict__", open_draft(state).__dict__)

    def replica(self, replica_id: str) -> Replica:
        """The replica with this id. (The actions, which run on every step, spell this
        ``d.replicas[d.position[replica_id]]``: the method call was a visible cost.)"""
        return self.replicas[self.position[replica_id]]

    def put(self, replica: Replica) -> None:
        """Replace the replica with ``replica.id`` by ``replica``."""
        replicas = self.replicas
        if type(replicas) is tuple:  # the first replacement: copy (see the module doc)
            replicas = self.replicas = list(replicas)
        replicas[self.position[replica.id]] = replica  # type: ignore[index]

    def fire(self, *rules: str) -> None:
        self.fired.extend(rules)

    def is_current_leader(self, replica: Replica) -> bool:
        """A live replica that believes it leads, in the epoch the controller has now."""
        ctrl = self.controller
        return (
            replica.online
            and replica.role is LEADER
            and replica.leader_epoch == ctrl.epoch
            and ctrl.leader == replica.id
        )

    def freeze(self) -> State:
        """The new state (what the step leads to): this draft, frozen into a ``State``
        (see the module doc); the draft is not usable afterwards."""
        fields = self.__dict__
        replicas = fields["replicas"]
        if type(replicas) is list:
            fields["replicas"] = tuple(replicas)
        fields["fired"] = tuple(fields["fired"])
        del fields["profile"], fields["position"]
        self.__class__ = State  # type: ignore[assignment]  # a Draft sets attributes plainly
        return self  # type: ignore[return-value]  # now a State (typing.cast is a call per step)


def open_draft(state: State) -> Draft:
    """``Draft(state)``, without the class call's overhead (``apply`` opens one per step)."""
    fields = state.__dict__.copy()
    if MEMO in fields:  # (a test and a del beat a pop call)
        del fields[MEMO]
    if HASH in fields:
        del fields[HASH]
    config = fields["config"]
    fields["fired"] = []
    fields["delivered"] = ()
    fields["profile"] = config.profile
    fields["position"] = config.position
    draft: Draft = _new(Draft)
    draft.__dict__ = fields  # a Draft is a plain object: no object.__setattr__ call
    return draft


_new = object.__new__


Readable = State | Draft
"""What a step's precondition reads (a ``*_refused`` function of a rule module): the state
before the step when ``enabled_steps`` asks, the step's own draft when the action asks.
Both have the ``State`` fields; a precondition reads them only through ``config``,
``replicas``, ``controller`` and the in-flight message fields."""
