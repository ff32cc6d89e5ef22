"""A replica's log: an immutable sequence of records with O(1) append and truncation.

Offsets are positions: the record at offset ``o`` is ``log[o]`` (the model never
deletes a log prefix, so the log start offset is always 0). The log end offset (LEO)
is ``len(log)``.

A ``Log`` is a view of the first ``n`` records of a buffer that only ever grows at its
end. Views never see past their own ``n``, so appending to the buffer in place, when the
view ends where the buffer ends, changes no existing log: every ``Log`` value stays what
it was. Truncation is a shorter view of the same buffer. A view that must grow where the
buffer already holds other records takes the same records if they are the very objects
being appended (a follower appending what it fetched from a leader whose log shares the
buffer) and copies its prefix into a new buffer otherwise (after a divergence). Logs
that share a buffer agree on their common prefix, which makes comparing them O(1) in the
common case (``same_prefix``).

Going on from an older state (a model checker's branch, a replay from a kept state) is
still correct, but the first append of each branch copies the log once, and its
followers' logs then have buffers of their own: comparing them (the StrongIsr invariant)
costs O(length) again on that branch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, overload


@dataclass(frozen=True, slots=True, init=False)
class Record:
    """One record: the value a producer sent and the leader epoch it was written in."""

    value: str
    epoch: int

    def __init__(self, value: str, epoch: int) -> None:
        # What the generated __init__ does, through the slots directly: a produce
        # builds one record per value (values.py: fast_init is the same idea).
        _set_value(self, value)
        _set_epoch(self, epoch)

    def render(self) -> str:
        """The canonical text form used in observations and fixtures: ``value@epoch``."""
        return f"{self.value}@{self.epoch}"


_set_value = Record.__dict__["value"].__set__
_set_epoch = Record.__dict__["epoch"].__set__


class _Buffer(list[Record]):
    """A log buffer, with the rendered form of its records made once each: a position of
    a buffer never changes once written (the module doc), so neither does its rendering."""

    __slots__ = ("rendered",)

    def __init__(self, records: Sequence[Record] = ()) -> None:
        super().__init__(records)
        self.rendered: list[str] = []


class Log(Sequence[Record]):
    """The first ``len(self)`` records of a shared, grow-only buffer (see the module doc)."""

    __slots__ = ("_buf", "end")

    def __init__(self, buf: list[Record] | None = None, n: int | None = None) -> None:
        self._buf: _Buffer = buf if isinstance(buf, _Buffer) else _Buffer(buf or ())
        self.end: int = len(self._buf) if n is None else n
        """The number of records: the log end offset (LEO)."""

    @classmethod
    def of(cls, records: Sequence[Record]) -> Log:
        """A log holding ``records`` in a buffer of its own."""
        return cls(list(records))

    def __len__(self) -> int:
        return self.end

    @overload
    def __getitem__(self, index: int) -> Record: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Record, ...]: ...
    def __getitem__(self, index: int | slice) -> Record | tuple[Record, ...]:
        if isinstance(index, slice):
            start, stop, stride = index.indices(self.end)
            return tuple(self._buf[start:stop:stride])
        if index < 0:
            index += self.end
        if not 0 <= index < self.end:
            raise IndexError("log offset out of range")
        return self._buf[index]

    def __iter__(self) -> Iterator[Record]:
        return islice(self._buf, self.end)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Log):
            if self.end != other.end:
                return False
            return self._buf is other._buf or self._buf[: self.end] == other._buf[: other.end]
        if isinstance(other, tuple):
            return tuple(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        # O(1) and consistent with ``==`` between logs (equal logs have the same length and
        # last record). A log equals a tuple of its records but hashes apart from it: keep
        # the two out of one set.
        return hash((self.end, self._buf[self.end - 1] if self.end else None))

    def __repr__(self) -> str:
        return f"Log({list(self)!r})"

    def rendered(self) -> list[str]:
        """``value@epoch`` of every record, each rendered once per buffer (observations
        ask for the whole log at every step)."""
        done = self._buf.rendered
        if len(done) < self.end:
            done.extend(record.render() for record in self._buf[len(done) : self.end])
        return done[: self.end]

    def extend(self, records: Sequence[Record]) -> Log:
        """This log with ``records`` appended (amortised O(len(records)))."""
        k = len(records)
        if not k:
            return self
        buf, n = self._buf, self.end
        if len(buf) == n:
            buf.extend(records)
            return _view(buf, n + k)
        if len(buf) >= n + k and all(buf[n + i] is record for i, record in enumerate(records)):
            return _view(buf, n + k)
        fresh = _Buffer(buf[:n])
        fresh.extend(records)
        return _view(fresh, n + k)

    def truncate(self, offset: int) -> Log:
        """Remove every record at or above ``offset`` (Kafka ``Log.truncateTo``)."""
        offset = max(0, offset)
        return self if offset >= self.end else _view(self._buf, offset)

    def read(self, start: int, end: int | None = None) -> tuple[Record, ...]:
        """Records in ``[start, end)`` (``end`` defaults to, and is capped at, the LEO)."""
        stop = self.end if end is None or end > self.end else end
        return tuple(self._buf[start:stop]) if start < stop else ()

    def read_entries(self, start: int, end: int | None = None) -> tuple[tuple[int, str, int], ...]:
        """``(offset, value, epoch)`` of the records in ``[start, end)`` (as ``read``):
        what a consumer receives."""
        stop = self.end if end is None or end > self.end else end
        if start >= stop:
            return ()
        return tuple([(offset, r.value, r.epoch) for offset, r in enumerate(self._buf[start:stop], start)])

    def same_prefix(self, other: Log, n: int) -> bool:
        """``self[:n] == other[:n]``: O(1) when the logs share their buffer."""
        if n > self.end or n > other.end:
            return self[:n] == other[:n]
        return self._buf is other._buf or self._buf[:n] == other._buf[:n]


def _view(buf: _Buffer, n: int) -> Log:
    """``Log(buf, n)`` for a buffer already made (the constructor's checks skipped: this
    is on the path of every append and truncation)."""
    log = _new(Log)
    log._buf = buf
    log.end = n
    return log


_new = object.__new__


def render(log: Sequence[Record]) -> list[str]:
    if isinstance(log, Log):
        return log.rendered()
    return [record.render() for record in log]


def as_log(records: Any) -> Log:
    """A ``Log`` from any sequence of records (tests and tools build logs this way)."""
    return records if isinstance(records, Log) else Log.of(tuple(records))
