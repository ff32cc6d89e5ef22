"""The adapter interface: how kconform drives an implementation.

An implementation is reached through one small seam, whatever language it is in:
``describe`` (who it is and what it can do), ``reset`` (a fresh partition from a
fixture's config), ``step`` (apply one step, return the observation or say the step was
rejected) and ``close``. Everything crosses the seam as plain JSON-ready data, so the
in-process adapter and the stdio adapter (``stdio.py``) behave the same to the runner.

The lifecycle and what each phase may raise (as Bowtie's harness does):

- ``describe`` / ``reset`` / ``step`` raise ``AdapterError`` when the implementation
  cannot answer (it crashed, hung, or said something that is not a valid message). The
  runner records the fixture as ``errored`` with that reason and calls ``restart``.
- A step the implementation *refuses* is not an error: ``step`` returns a
  ``StepResult`` with ``rejected`` set.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

PROTOCOL_VERSION = 4
"""The version kconform speaks. Version 4 adds protocol options (offered in ``hello``'s
``options``, taken by declaring them in the capabilities): ``observation_deltas`` (step
replies with only what changed, ``deltas.py``) and ``pipelining`` (kconform may send
several requests before it reads their replies, ``stdio.py``). Version 3 adds starting from a given state (``reset``'s
``initial``, for an adapter that declares the ``initial_state`` capability) and the
observation fields ``answers`` and ``log_start``; version 2 added optional finer
capabilities (``role_fields``, ``step_fields``, ``conventions``). Adapters speaking 1, 2 or 3
are still accepted: they have none of the later additions, and fixtures needing them are
skipped or compared on the fields they report."""

ACCEPTED_PROTOCOLS = (1, 2, 3, 4)


class AdapterError(Exception):
    """The implementation failed to answer properly. ``detail`` carries diagnostics
    (captured stderr, the last exchange) for the report."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


@dataclass(frozen=True)
class Description:
    """What an implementation says about itself in the handshake."""

    name: str
    version: str
    generations: tuple[str, ...]
    steps: tuple[str, ...]
    """Step kinds it can perform (``produce``, ``fetch``, ...)."""
    fields: tuple[str, ...]
    """Top-level observation fields it reports (``leader``, ``isr``, ``replicas``, ...)."""
    replica_fields: tuple[str, ...]
    """Per-replica fields it reports (``leo``, ``hw``, ...)."""
    language: str = ""
    homepage: str = ""
    role_fields: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Per role (``leader``, ``follower``, ``none``): the replica fields reported on a replica in
    that role; a role not listed reports every field of ``replica_fields``."""
    step_fields: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Per step kind: the optional step fields it honours (``fetch: [max_records]``); a kind not
    listed honours all of them."""
    conventions: dict[str, Any] = field(default_factory=dict)
    """How its observations differ in form from the reference's (``conventions.py``)."""
    initial_state: bool = False
    """Protocol 3: it can start from a given state (``reset(config, initial=...)``); fixtures
    with an ``initial:`` block are skipped on an implementation without it."""
    limits: dict[str, Any] = field(default_factory=dict)
    """Config ranges it supports and features it is without (``limits.py``): what needs
    more is skipped with the reason, never failed."""

    @cached_property
    def field_set(self) -> frozenset[str]:
        """``fields`` as a set (comparisons ask it at every step)."""
        return frozenset(self.fields)

    @cached_property
    def replica_field_set(self) -> frozenset[str]:
        """``replica_fields`` as a set."""
        return frozenset(self.replica_fields)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "language": self.language,
            "homepage": self.homepage,
            "generations": list(self.generations),
            "capabilities": {
                "steps": list(self.steps),
                "fields": list(self.fields),
                "replica_fields": list(self.replica_fields),
                **({"role_fields": {k: list(v) for k, v in self.role_fields.items()}} if self.role_fields else {}),
                **({"step_fields": {k: list(v) for k, v in self.step_fields.items()}} if self.step_fields else {}),
                **({"conventions": dict(self.conventions)} if self.conventions else {}),
                **({"initial_state": True} if self.initial_state else {}),
                **({"limits": dict(self.limits)} if self.limits else {}),
            },
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Description:
        caps = data.get("capabilities") or {}
        return cls(
            name=str(data["name"]),
            version=str(data.get("version", "")),
            language=str(data.get("language", "")),
            homepage=str(data.get("homepage", "")),
            generations=tuple(data.get("generations") or ()),
            steps=tuple(caps.get("steps") or ()),
            fields=tuple(caps.get("fields") or ()),
            replica_fields=tuple(caps.get("replica_fields") or ()),
            role_fields={str(k): tuple(v) for k, v in (caps.get("role_fields") or {}).items()},
            step_fields={str(k): tuple(v) for k, v in (caps.get("step_fields") or {}).items()},
            conventions=dict(caps.get("conventions") or {}),
            initial_state=caps.get("initial_state") is True,
            limits=_limits(caps.get("limits")),
        )


def _limits(data: Any) -> dict[str, Any]:
    """A ``limits`` capability, checked (``limits.check`` raises ``ValueError`` subclasses)."""
    if data is None:
        return {}
    from .limits import check

    check(data)
    return dict(data)


@dataclass(frozen=True)
class StepResult:
    """The answer to one step: an observation, or a rejection with its reason."""

    observation: dict[str, Any] | None = None
    rejected: str | None = None
    """Why the step was refused (its precondition does not hold)."""
    rule: str | None = None
    """The spec rule of the refusing guard, if the implementation knows it."""
    fired: tuple[str, ...] = field(default=())
    """Spec rules the step fired, if the implementation reports them (the reference does)."""


class Adapter(ABC):
    """One running implementation. Not thread-safe; one fixture at a time."""

    trusted: bool = False
    """True only for kconform's own reference: its observations are not schema-checked."""

    shares_observations: bool = False
    """True when an observation's unchanged parts are the very objects of the previous
    observation and no observation is changed after it is returned (an in-process
    implementation can promise it; ``reference_impl.observe.Observer`` does it for the
    reference): the safety monitor then settles a replica that is the same object as at
    the previous step by identity, and compares logs only from where they may differ
    (``safety``), so a step costs what it changed. Never set it for an adapter that updates one dict in place."""

    @abstractmethod
    def describe(self) -> Description: ...

    @abstractmethod
    def reset(self, config: dict[str, Any], initial: dict[str, Any] | None = None) -> None:
        """Start a fresh partition with this config (plain data, a fixture's ``config``
        with ``generation`` filled in), or, with ``initial`` (every default spelled out,
        ``reference_impl.given.normalise``), the partition in that state. kconform passes
        ``initial`` only to an implementation whose description has ``initial_state``."""

    @abstractmethod
    def step(self, step: dict[str, Any]) -> StepResult:
        """Apply one step (plain data, a fixture's ``do``)."""

    def send_ahead(self, step: dict[str, Any]) -> bool:
        """Send ``step`` before the answers to the steps sent ahead of it are read; its
        answer is what a later ``step`` call with this very object returns (steps sent
        ahead are answered, and asked for, in the order sent). False: not taken (this
        adapter does not pipeline, or enough is in flight); ``step`` then sends it. The
        judge sends ahead only steps whose content no unread answer can change
        (``judging/ahead.py``); the answers to steps sent ahead of a run that ended early are
        read and dropped by the next ``reset``. The stdio adapter pipelines when the
        program opts into protocol 4's ``pipelining``."""
        return False

    def restart(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Recover after an ``AdapterError`` so the next fixture can run."""

    def close(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Release the implementation (end a process, free memory)."""
