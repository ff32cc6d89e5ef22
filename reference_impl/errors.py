"""The exceptions the reference implementation raises.

Two things can go wrong when driving the model: the configuration is not a valid
partition (``ConfigError``), or a step is asked for whose precondition does not hold
(``StepRejected``). Both carry a message a user can act on; a rejected step also names
the spec rule whose guard failed, so a fixture author can look it up in
``spec/replication.md``.
"""

from __future__ import annotations


class KconformModelError(Exception):
    """Base class of every error the reference implementation raises on purpose."""


class ConfigError(KconformModelError):
    """The partition configuration is not usable (unknown replica, bad number, ...)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class StepRejected(KconformModelError):
    """A step was applied in a state where its precondition does not hold.

    ``rule`` is the id of the spec rule whose guard failed (for example
    ``FETCH-PRE-1``); ``reason`` says, in words, what is missing.
    """

    def __init__(self, rule: str, reason: str) -> None:
        # No ``super().__init__`` with the message: the precondition functions return a
        # rejection for every step they refuse, and ``enabled_steps`` asks them of about
        # thirty candidates per state (``kconform explore``: eighteen refused; formatting
        # their messages, which nobody reads, was about a sixth of ``enabled_steps``'s time).
        # The message is made when asked for (``str``, ``repr``, ``args``): the same text.
        self.rule = rule
        self.reason = reason

    def __str__(self) -> str:
        return f"[{self.rule}] {self.reason}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"

    @property
    def args(self) -> tuple[str]:  # type: ignore[override]
        """``(message,)``, as ``Exception(message)`` would hold."""
        return (str(self),)

    def __reduce__(self) -> tuple[type[StepRejected], tuple[str, str]]:
        return (type(self), (self.rule, self.reason))


class StepFormatError(KconformModelError):
    """A step given as plain data (a fixture's ``do``) is malformed."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
