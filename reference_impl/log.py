"""A replica's log: an immutable sequence of records with O(1) append and truncation.

Offsets are positions: the record at offset ``o`` is ``log[o]``; below a log start
offset (LOG-START-1) a log reads ``GAP``, and its buffer stores nothing there (it starts
at a base offset), so a log that starts at offset 10^9 costs what its records cost. The
log end offset (LEO) is ``len(log)``.

A ``Log`` is a view of the first ``n`` records of a buffer that only ever grows at its
end. Views never see past their own ``n``, so appending to the buffer in place, when the
view ends where the buffer ends, changes no existing log: every ``Log`` value stays what
it was. Truncation is a shorter view of the same buffer. A view that must grow where the
buffer already holds other records takes the same records if they are the very objects
being appended (a follower appending what it fetched from a leader whose log shares the
buffer) and copies its prefix into a new buffer otherwise (after a divergence). Logs
that share a buffer agree on their common prefix, which makes comparing them O(1) in the
common case (``same_prefix``). Logs whose buffers differ (after a divergence, or going
on from an older state: the first append of each branch copies the log once) are
compared through ``first_difference``, which remembers per pair of buffers how far they
agree: written positions never change, so each offset is compared once per pair.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, islice, repeat
from typing import overload


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


GAP = Record("", -1)
"""What a log holds below its log start offset (LOG-START-1): offsets stay positions, so
the records a log no longer has read as this placeholder, which nothing observes or
caches (no produced value is empty, no epoch is negative). A log keeps no placeholder:
its buffer starts at a base offset and every offset below it reads as ``GAP``."""

AGREEMENTS = 16
"""How many other buffers one buffer remembers its agreement with (``_Buffer.agree``)."""


_NO_END = (1 << 63) - 1
"""An offset above every real one: an original buffer reads as itself everywhere."""


class _Buffer(list[Record]):
    """A log buffer: ``self[i]`` is the record at offset ``base + i`` (below ``base``
    every offset holds ``GAP``), with the rendered form of its records made once each: a
    position of a buffer never changes once written (the module doc), so neither does its
    rendering, nor where two buffers first differ (``agree``)."""

    __slots__ = ("agree", "base", "below", "rendered", "root")

    def __init__(self, records: Sequence[Record] = (), base: int = 0) -> None:
        super().__init__(records)
        self.rendered: list[str] = []
        self.base = base
        self.agree: dict[tuple[int, int], tuple[_Buffer, int, bool]] = {}
        """(id of another buffer, from offset) -> (that buffer, offset, differs): the two
        hold the same records from the from-offset up to the offset, which is where they
        differ if ``differs`` (final: written positions never change) or as far as they
        were compared (both may grow past it)."""
        self.root: object = object()
        """The original buffer this one was copied from (through any number of copies),
        as a token: holding it keeps no buffer alive."""
        self.below = _NO_END
        """Below this offset, this buffer reads as its ``root`` did (every copy ends
        somewhere; an original reads as itself everywhere)."""


class Log(Sequence[Record]):
    """The first ``len(self)`` records of a shared, grow-only buffer (see the module doc).
    Offsets below the buffer's base read as ``GAP`` (a log start, LOG-START-1) and cost
    nothing."""

    __slots__ = ("_buf", "end")

    def __init__(self, buf: list[Record] | None = None, n: int | None = None) -> None:
        self._buf: _Buffer = buf if isinstance(buf, _Buffer) else _Buffer(buf or ())
        self.end: int = self._buf.base + len(self._buf) if n is None else n
        """The number of records: the log end offset (LEO)."""

    @classmethod
    def of(cls, records: Sequence[Record]) -> Log:
        """A log holding ``records`` in a buffer of its own."""
        return cls(list(records))

    @classmethod
    def starting_at(cls, offset: int, records: Sequence[Record] = ()) -> Log:
        """A log whose offsets below ``offset`` are ``GAP`` and that holds ``records``
        from there on: O(len(records)), whatever ``offset`` is."""
        return cls(_Buffer(records, offset))

    @property
    def base(self) -> int:
        """The offset of the buffer's first stored record: every offset below holds ``GAP``."""
        return self._buf.base

    def __len__(self) -> int:
        return self.end

    @overload
    def __getitem__(self, index: int) -> Record: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Record, ...]: ...
    def __getitem__(self, index: int | slice) -> Record | tuple[Record, ...]:
        if isinstance(index, slice):
            start, stop, stride = index.indices(self.end)
            if stride == 1:
                return self.read(start, stop)
            return tuple(self[i] for i in range(start, stop, stride))
        if index < 0:
            index += self.end
        if not 0 <= index < self.end:
            raise IndexError("log offset out of range")
        base = self._buf.base
        return self._buf[index - base] if index >= base else GAP

    def __iter__(self) -> Iterator[Record]:
        base = self._buf.base
        if not base:
            return islice(self._buf, self.end)
        return chain(repeat(GAP, min(base, self.end)), islice(self._buf, max(0, self.end - base)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Log):
            if self.end != other.end:
                return False
            return self._buf is other._buf or self.first_difference(other, 0, self.end) == self.end
        if isinstance(other, tuple):
            return tuple(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        # O(1) and consistent with ``==`` between logs (equal logs have the same length and
        # last record). A log equals a tuple of its records but hashes apart from it: keep
        # the two out of one set.
        return hash((self.end, self[self.end - 1] if self.end else None))

    def __repr__(self) -> str:
        return f"Log({list(self)!r})"

    def rendered(self, start: int = 0) -> list[str]:
        """``value@epoch`` of every record from offset ``start`` on, each rendered once per
        buffer (observations ask for the whole log at every step)."""
        buf = self._buf
        base, done = buf.base, buf.rendered
        stop = self.end - base  # where this log ends in the buffer
        if len(done) < stop:
            done.extend(record.render() for record in buf[len(done) : stop])
        if start >= base:
            return done[start - base : max(0, stop)]
        gaps = [GAP.render()] * max(0, min(base, self.end) - start)
        return gaps + done[: max(0, stop)]

    def extend(self, records: Sequence[Record]) -> Log:
        """This log with ``records`` appended (amortised O(len(records)))."""
        k = len(records)
        if not k:
            return self
        buf, n = self._buf, self.end
        at = n - buf.base  # where the records go in the buffer
        if len(buf) == at:
            buf.extend(records)
            return _view(buf, n + k)
        if at >= 0 and len(buf) >= at + k and all(buf[at + i] is record for i, record in enumerate(records)):
            return _view(buf, n + k)
        fresh = _Buffer(buf[: max(0, at)], min(buf.base, n))
        fresh.root, fresh.below = buf.root, min(buf.below, n)
        fresh.extend(records)
        return _view(fresh, n + k)

    def truncate(self, offset: int) -> Log:
        """Remove every record at or above ``offset`` (Kafka ``Log.truncateTo``)."""
        offset = max(0, offset)
        return self if offset >= self.end else _view(self._buf, offset)

    def read(self, start: int, end: int | None = None) -> tuple[Record, ...]:
        """Records in ``[start, end)`` (``end`` defaults to, and is capped at, the LEO)."""
        stop = self.end if end is None or end > self.end else end
        if start >= stop:
            return ()
        base = self._buf.base
        if start >= base:
            return tuple(self._buf[start - base : stop - base])
        return (GAP,) * (min(stop, base) - start) + tuple(self._buf[: max(0, stop - base)])

    def read_entries(self, start: int, end: int | None = None) -> tuple[tuple[int, str, int], ...]:
        """``(offset, value, epoch)`` of the records in ``[start, end)`` (as ``read``):
        what a consumer receives."""
        return tuple([(offset, r.value, r.epoch) for offset, r in enumerate(self.read(start, end), start)])

    def same_prefix(self, other: Log, n: int) -> bool:
        """``self[:n] == other[:n]``: O(1) when the logs share their buffer, and otherwise
        amortised over the run (``first_difference``)."""
        if n > self.end or n > other.end:
            return self[:n] == other[:n]
        return self._buf is other._buf or self.first_difference(other, 0, n) == n

    def first_difference(self, other: Log, start: int, n: int) -> int:
        """The first offset in ``[start, n)`` where the two logs hold different records, or
        ``n`` (``n`` at most both LEOs). Where two buffers differ never changes once both
        hold the offset, so it is remembered per pair of buffers and start: along a run
        each offset of two logs is compared once, not at every step (the StrongIsr
        invariant asks at every step; followers whose logs were copied after a divergence
        no longer share a buffer with the leader)."""
        return _first_difference(self._buf, other._buf, start, n)


def _first_difference(mine: _Buffer, theirs: _Buffer, start: int, n: int) -> int:
    """``Log.first_difference`` on two buffers (``n`` at most what both hold). Two buffers
    copied (through any number of copies) from one original read as it below both copies'
    ends (``root``, ``below``), so a log copied after a divergence is compared only from
    there, not from its start: a leader change does not make whole logs be compared."""
    if mine is theirs or n <= start:
        return n
    key = (id(theirs), start)
    known = mine.agree.get(key)
    at = start
    if known is not None and known[0] is theirs:
        at, differs = known[1], known[2]
        if differs or n <= at:
            return min(at, n)
    elif mine.root is theirs.root:
        at = max(start, min(mine.below, theirs.below, n))
    at, differs = _compare(mine, theirs, at, n)
    if len(mine.agree) >= AGREEMENTS and key not in mine.agree:
        mine.agree.clear()
    mine.agree[key] = (theirs, at, differs)
    return at


def _compare(mine: _Buffer, theirs: _Buffer, at: int, n: int) -> tuple[int, bool]:
    """(where the buffers first differ in ``[at, n)`` or ``n``, whether they do)."""
    low = min(mine.base, theirs.base)
    if at < low:
        at = min(low, n)  # both GAP below both bases
    while at < n and at < max(mine.base, theirs.base):  # one side GAP: offset by offset
        a = mine[at - mine.base] if at >= mine.base else GAP
        b = theirs[at - theirs.base] if at >= theirs.base else GAP
        if a != b:
            return at, True
        at += 1
    if at >= n:
        return n, False
    ours, other = mine[at - mine.base : n - mine.base], theirs[at - theirs.base : n - theirs.base]
    if ours == other:
        return n, False
    for i, (a, b) in enumerate(zip(ours, other, strict=True)):
        if a is not b and a != b:
            return at + i, True
    return n, False  # not reached: the slices differ somewhere


def _view(buf: _Buffer, n: int) -> Log:
    """``Log(buf, n)`` for a buffer already made (the constructor's checks skipped: this
    is on the path of every append and truncation)."""
    log = _new(Log)
    log._buf = buf
    log.end = n
    return log


_new = object.__new__


def render(log: Sequence[Record]) -> list[str]:
    """``value@epoch`` of every record of ``log`` (a ``Log``'s are made once per buffer)."""
    if isinstance(log, Log):
        return log.rendered()
    return [record.render() for record in log]
