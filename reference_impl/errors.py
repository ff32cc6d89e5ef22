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
        super().__init__(f"[{rule}] {reason}")
        self.rule = rule
        self.reason = reason


class StepFormatError(KconformModelError):
    """A step given as plain data (a fixture's ``do``) is malformed."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
