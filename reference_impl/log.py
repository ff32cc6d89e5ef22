"""A replica's log as an immutable tuple of records, and the few operations on it.

Offsets are positions: the record at offset ``o`` is ``log[o]`` (the model never
deletes a log prefix, so the log start offset is always 0). The log end offset (LEO)
is ``len(log)``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Record:
    """One record: the value a producer sent and the leader epoch it was written in."""

    value: str
    epoch: int

    def render(self) -> str:
        """The canonical text form used in observations and fixtures: ``value@epoch``."""
        return f"{self.value}@{self.epoch}"


Log = tuple[Record, ...]


def leo(log: Log) -> int:
    """The log end offset: the offset the next record will get."""
    return len(log)


def append(log: Log, records: tuple[Record, ...]) -> Log:
    return log + records


def truncate_to(log: Log, offset: int) -> Log:
    """Remove every record at or above ``offset`` (Kafka ``Log.truncateTo``)."""
    return log[: max(0, offset)]


def read(log: Log, start: int, end: int | None = None) -> tuple[Record, ...]:
    """Records in ``[start, end)`` (``end`` defaults to the LEO)."""
    return log[start:end]


def render(log: Log) -> list[str]:
    return [record.render() for record in log]
