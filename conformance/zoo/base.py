"""What a zoo member is: the reference with one rule broken, behind the ``Adapter`` seam.

A member is a ``Mutant`` subclass registered with ``@member(...)``: its docstring says what
it gets wrong, the registration names the Kafka bug or misreading it models (the entry of
``docs/research/historical-bugs.md``), the generations where it differs from the
reference and the spec rules it breaks. A mutant changes the reference in one of three
ways, all undone after each call so the reference itself is never altered:

- ``patches()``: module attributes replaced while the mutant resets or steps (the
  function that implements the rule, patched where it is looked up);
- ``profile``: generation-profile flags overridden (``reference_impl/generation.py``),
  for a member that carries one generation's rule into another;
- ``config``: config fields overridden at reset (a setting the bug ignores);
- ``after()``: a change made to each new state (for answers built inside a step).
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import MappingProxyType, ModuleType, SimpleNamespace
from typing import Any, ClassVar

import reference_impl
from reference_impl import State, Step, step_to_dict
from reference_impl.draft import Draft

from ..adapters.base import StepResult
from ..adapters.in_process import ALL_GENERATIONS, ReferenceAdapter

Patch = tuple[Any, Any, Any]
"""``(owner, attribute, replacement)``: ``owner.attribute`` (or ``owner[key]`` for a dict) is
``replacement`` during a call."""

APPLY = importlib.import_module("reference_impl.apply")
"""The module (``reference_impl.apply`` is also the name of its function): its ``ACTIONS``."""

ALL = ALL_GENERATIONS
EPOCHS = ("leader-epoch", "diverging-epoch")
HT = ("hw-truncation",)
LE = ("leader-epoch",)
DE = ("diverging-epoch",)


def on_draft(state: State, change: Callable[[Draft], None]) -> State:
    """``state`` after ``change`` made on a draft of it (its fired rules kept)."""
    draft = Draft(state)
    draft.fired = list(state.fired)
    change(draft)
    return draft.freeze()


def module_with(module: ModuleType, **overrides: Any) -> SimpleNamespace:
    """A stand-in for ``module`` with some functions replaced (to patch a module that
    another module imported whole, e.g. ``epoch_cache`` as seen by ``epoch_leader``)."""
    names = {k: v for k, v in vars(module).items() if not k.startswith("__")}
    return SimpleNamespace(**{**names, **overrides})


class Mutant(ReferenceAdapter):
    """The reference adapter with one rule broken (see the module doc)."""

    member: ClassVar[Member]
    shares_observations = True
    """It keeps the reference's promise (``Adapter.shares_observations``): its observations
    are the reference's ``Observer``'s, or whole new ones after ``after`` changed the
    state, and it never edits one. It is not ``trusted``: its observations are checked."""
    profile: ClassVar[Mapping[str, bool]] = MappingProxyType({})
    config: ClassVar[Mapping[str, Any]] = MappingProxyType({})

    def __init__(self, name: str) -> None:
        super().__init__(name=name)

    def patches(self) -> Iterable[Patch]:
        return ()

    def after(self, before: State, after: State, step: dict[str, Any]) -> State:
        return after

    def on_reset(self, state: State) -> State:
        return state

    @contextmanager
    def patched(self) -> Iterator[None]:
        """The patches applied for one call and undone however it ends: plain attribute
        and item swaps (``mock.patch`` costs more than a reference step, and a bounded
        search steps a member tens of thousands of times)."""
        undo: list[tuple[Any, Any, bool, Any]] = []
        try:
            for owner, attribute, replacement in self.patches():
                if isinstance(owner, dict):
                    undo.append((owner, attribute, attribute in owner, owner.get(attribute)))
                    owner[attribute] = replacement
                else:
                    original = getattr(owner, attribute)  # AttributeError for a misspelt patch, as mock
                    undo.append((owner, attribute, attribute in vars(owner), original))
                    setattr(owner, attribute, replacement)
                    # ``apply`` dispatches through its tables of the step table's functions:
                    # a step's action or precondition is patched there too
                    for table in (APPLY.ACTIONS, APPLY.REFUSALS):
                        for key, value in list(table.items()):
                            if value is original:
                                undo.append((table, key, True, original))
                                table[key] = replacement
            yield
        finally:
            for owner, attribute, own, original in reversed(undo):
                if isinstance(owner, dict):
                    if own:
                        owner[attribute] = original
                    else:
                        owner.pop(attribute, None)
                elif own:
                    setattr(owner, attribute, original)
                else:  # inherited: remove the shadowing attribute
                    delattr(owner, attribute)

    def advance(self, state: State, step: Step) -> State:
        """``state`` after ``step`` as this member performs it, without observing it
        (raises ``StepRejected``): how ``explore`` replays a search tree on a member,
        comparing states and observing only where they differ."""
        with self.patched():
            after = reference_impl.apply(state, step)
        if type(self).after is Mutant.after:
            return after
        return self.after(state, after, step_to_dict(step))

    def reset(self, config: dict[str, Any], initial: dict[str, Any] | None = None) -> None:
        with self.patched():
            super().reset({**config, **self.config}, initial)
        if self._state is None:
            return
        if self.profile and config.get("generation") in self.member.generations:
            cfg = self._state.config
            # Config.profile is a cached property: the instance's own value wins, so this
            # partition (and only it) runs with the changed flags.
            changes: dict[str, Any] = dict(self.profile)
            object.__setattr__(cfg, "profile", dataclasses.replace(cfg.profile, **changes))
        self._state = self.on_reset(self._state)

    def step(self, step: dict[str, Any]) -> StepResult:
        before = self._state
        with self.patched():
            result = super().step(step)
        if result.observation is None or before is None or self._state is None:
            return result
        changed = self.after(before, self._state, step)
        if changed is self._state:
            return result
        self._state = changed
        return StepResult(observation=reference_impl.observe(changed), fired=changed.fired)


@dataclass(frozen=True)
class Member:
    """One zoo member: a named rule-breaker and where it comes from."""

    name: str
    number: int
    """Its entry in docs/research/historical-bugs.md."""
    source: str
    """The Kafka JIRA / KIP, or the misreading, it models."""
    generations: tuple[str, ...]
    """Where it differs from the reference (it runs, and is judged, in every generation)."""
    rules: tuple[str, ...]
    """The spec rules it breaks (spec/replication.md)."""
    cls: type[Mutant]

    @property
    def summary(self) -> str:
        doc = (self.cls.__doc__ or "").strip()
        return " ".join(doc.split("\n\n")[0].split())

    def build(self) -> Mutant:
        return self.cls(self.name)


REGISTRY: dict[str, Member] = {}


def member(
    name: str,
    number: int,
    source: str,
    generations: tuple[str, ...],
    rules: tuple[str, ...],
    *,
    profile: dict[str, bool] | None = None,
    config: dict[str, Any] | None = None,
) -> Callable[[type[Mutant]], type[Mutant]]:
    """Register a ``Mutant`` subclass as the zoo member ``name`` (with ``profile`` flags
    or ``config`` fields overridden, if given)."""

    def register(cls: type[Mutant]) -> type[Mutant]:
        if profile is not None:
            cls.profile = MappingProxyType(dict(profile))
        if config is not None:
            cls.config = MappingProxyType(dict(config))
        if name in REGISTRY:
            raise ValueError(f"zoo member {name!r} registered twice")
        if not (cls.__doc__ or "").strip():
            raise ValueError(f"zoo member {name!r} needs a docstring saying what it gets wrong")
        entry = Member(name, number, source, generations, rules, cls)
        cls.member = entry
        REGISTRY[name] = entry
        return cls

    return register
