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
buffer) and otherwise forks (after a divergence): a fresh buffer that stores only the
records appended from there and reads every offset below from the buffers the old view
read it from (``_Buffer.sources``, a short tuple of pieces). Copying the prefix instead
would make each divergence cost the whole log, for every replica that appends after it.
Logs that share a buffer agree on their common prefix, which makes comparing them O(1)
in the common case (``same_prefix``). Logs whose buffers differ are compared through
``first_difference``, which skips the pieces both read from one buffer and remembers per
pair of buffers how far they agree: written positions never change, so each offset is
compared once per pair.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
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

SEGMENTS = 24
"""At most this many pieces below a buffer's own records (``_Buffer.sources``): past it,
a fork merges the two neighbouring pieces that hold the fewest records together into one
fresh buffer, so a read below a buffer's base bisects a short tuple whatever the history,
and a merge copies little (the pieces of a long run grow towards its start: the small
ones are the recent ones)."""

_NO_END = (1 << 63) - 1
"""An offset above every real one: a buffer's own records go on to its end."""


class _Buffer(list[Record]):
    """A log buffer: ``self[i]`` is the record at offset ``base + i``; below ``base`` an
    offset reads from the buffer in ``sources`` whose piece holds it (``starts[i]`` up to
    the next start, the last up to ``base``), and below the first start (or ``base``) it
    holds ``GAP``. A fork after a divergence therefore stores only its own records and
    points at the buffers it read the rest from (O(pieces), not O(log)). The rendered form
    of its records is made once each: a position of a buffer never changes once written
    (the module doc), so neither does its rendering, nor where two buffers first differ
    (``agree``)."""

    __slots__ = ("agree", "base", "rendered", "sources", "starts")

    def __init__(
        self,
        records: Sequence[Record] = (),
        base: int = 0,
        starts: tuple[int, ...] = (),
        sources: tuple[_Buffer, ...] = (),
    ) -> None:
        super().__init__(records)
        self.rendered: list[str] = []
        self.base = base
        self.starts = starts
        """Where each piece read from ``sources`` begins (increasing, all below ``base``)."""
        self.sources = sources
        """The buffers the pieces below ``base`` are read from, each in its own records
        (``source[o - source.base]``): written positions never change, so a piece stays
        what it was when the fork was made."""
        self.agree: dict[tuple[int, int], tuple[_Buffer, int, bool]] = {}
        """(id of another buffer, from offset) -> (that buffer, offset, differs): the two
        hold the same records from the from-offset up to the offset, which is where they
        differ if ``differs`` (final: written positions never change) or as far as they
        were compared (both may grow past it)."""

    def at(self, offset: int) -> Record:
        """The record at ``offset`` (below the buffer's end)."""
        if offset >= self.base:
            return self[offset - self.base]
        i = bisect_right(self.starts, offset) - 1
        if i < 0:
            return GAP
        source = self.sources[i]
        return source[offset - source.base]

    def piece(self, offset: int) -> tuple[_Buffer | None, int]:
        """(the buffer whose own records hold ``offset`` for this one, or None where it
        reads ``GAP``; the offset where that piece ends)."""
        if offset >= self.base:
            return self, _NO_END
        starts = self.starts
        i = bisect_right(starts, offset) - 1
        if i < 0:
            return None, starts[0] if starts else self.base
        return self.sources[i], starts[i + 1] if i + 1 < len(starts) else self.base

    def pieces(self, start: int, stop: int) -> Iterator[tuple[_Buffer | None, int, int]]:
        """(buffer or None for ``GAP``, from, to) covering ``[start, stop)`` in order."""
        at = start
        while at < stop:
            source, end = self.piece(at)
            end = min(end, stop)
            yield source, at, end
            at = end


class Log(Sequence[Record]):
    """The first ``len(self)`` records of a shared, grow-only buffer (see the module doc).
    Offsets below the lowest one a buffer reads a record for read as ``GAP`` (a log start,
    LOG-START-1) and cost nothing."""

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
        """The lowest offset the buffer reads a record for: every offset below holds ``GAP``."""
        buf = self._buf
        return buf.starts[0] if buf.starts else buf.base

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
        buf = self._buf
        return buf[index - buf.base] if index >= buf.base else buf.at(index)

    def __iter__(self) -> Iterator[Record]:
        buf = self._buf
        if not buf.base:
            return islice(buf, self.end)
        return chain.from_iterable(
            repeat(GAP, b - a) if source is None else _records(source, a, b) for source, a, b in buf.pieces(0, self.end)
        )

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
        # the two out of one set. The last record is read from the buffer directly and
        # hashed as its two fields (a replica's hash, which ``kconform explore`` computes
        # for every replica a step changes, hashes its log: no Python-level call here).
        n = self.end
        if not n:
            return hash((0, None))
        buf = self._buf
        last = buf[n - 1 - buf.base] if n - 1 >= buf.base else buf.at(n - 1)
        return hash((n, last.value, last.epoch))

    def __repr__(self) -> str:
        return f"Log({list(self)!r})"

    def rendered(self, start: int = 0) -> list[str]:
        """``value@epoch`` of every record from offset ``start`` on, each rendered once per
        buffer (observations ask for the whole log at every step it changed); below a
        forked buffer's base, from its pieces' renderings joined once (``_below_rendered``)."""
        buf, stop = self._buf, self.end
        base = buf.base
        if start >= base:
            return _rendered(buf, stop)[start - base : max(0, stop - base)]
        if stop <= base:  # a view cut below the buffer's own records: read piece by piece
            out: list[str] = []
            for source, a, b in buf.pieces(max(0, start), stop):
                if source is None:
                    out += [GAP.render()] * (b - a)
                else:
                    out += _rendered(source, b)[a - source.base : b - source.base]
            return out
        low = buf.starts[0] if buf.starts else base
        if start >= low:
            out = _below_rendered(buf)[start - low :]
        else:
            out = [GAP.render()] * (low - start)
            out += _below_rendered(buf)
        out += _rendered(buf, stop)[: stop - base]
        return out

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
        shared = _read_from(buf, n, records)
        if shared is not None:
            return _view(shared, n + k)
        fresh = _fork(buf, n)
        fresh.extend(records)
        return _view(fresh, n + k)

    def truncate(self, offset: int) -> Log:
        """Remove every record at or above ``offset`` (Kafka ``Log.truncateTo``)."""
        offset = max(0, offset)
        return self if offset >= self.end else _view(self._buf, offset)

    def read(self, start: int, end: int | None = None) -> tuple[Record, ...]:
        """Records in ``[start, end)`` (``end`` defaults to, and is capped at, the LEO).
        The answer is remembered for a while with where it was read (``_READS``): a
        follower that appends it (a fetch) can then share this log's buffer."""
        stop = self.end if end is None or end > self.end else end
        if start >= stop:
            return ()
        buf = self._buf
        base = buf.base
        if start >= base:
            out = tuple(buf[start - base : stop - base])
        else:
            out = tuple(chain.from_iterable(_records(source, a, b) for source, a, b in buf.pieces(start, stop)))
        if len(_READS) >= READS:
            _READS.clear()
        _READS[id(out)] = (out, buf, start)
        return out

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
        invariant asks at every step; a log forked after a divergence shares only its
        pieces with the others until they append what it returned, ``_read_from``)."""
        return _first_difference(self._buf, other._buf, start, n)


READS = 32
"""How many recent ``Log.read`` answers are remembered with their buffer (``_READS``)."""

_READS: dict[int, tuple[tuple[Record, ...], _Buffer, int]] = {}
"""id of a ``read`` answer -> (the answer, the buffer it was read from, its first offset).
The answer is held, so its id names it while it is here; emptied when full."""


def _read_from(buf: _Buffer, n: int, records: Sequence[Record]) -> _Buffer | None:
    """The buffer ``records`` were read from at offset ``n``, if it reads as ``buf`` below
    ``n``: then a view of it ending after them is this log with them appended, and the
    appending log shares its buffer instead of forking its own. That is a follower
    appending what its leader's log returned after a divergence: without it every
    replica would go on in a buffer of its own, and every comparison of two replicas'
    logs (StrongIsr, at every step) would read them whole once per new pair of buffers."""
    seen = _READS.get(id(records))
    if seen is None or seen[0] is not records or seen[2] != n:
        return None
    source = seen[1]
    return source if _first_difference(buf, source, 0, n) == n else None


def _records(source: _Buffer | None, a: int, b: int) -> Sequence[Record]:
    """The records of offsets ``[a, b)`` of one piece (``source``'s own, or ``GAP``)."""
    if source is None:
        return (GAP,) * (b - a)
    return source[a - source.base : b - source.base]


def _rendered(buf: _Buffer, stop: int) -> list[str]:
    """``buf.rendered``, made at least up to offset ``stop`` (of ``buf``'s own records)."""
    done, upto = buf.rendered, stop - buf.base
    if len(done) < upto:
        done.extend(record.render() for record in buf[len(done) : upto])
    return done


BELOW_RENDERED = 8
"""How many forked buffers keep the rendering of their pieces joined (``_BELOW``)."""

_BELOW: dict[int, tuple[_Buffer, list[str]]] = {}
"""id of a buffer -> (the buffer, the rendering of its offsets from its first piece up to
its base): fixed once the buffer is made. Kept for a few buffers only, not on each: a
buffer that became one of a later fork's pieces would otherwise keep a whole log's
rendering alive."""


def _below_rendered(buf: _Buffer) -> list[str]:
    """The rendering of ``buf``'s offsets from its first piece's start up to its base
    (``_BELOW``): a forked log observed at every step joins its pieces once, not per step."""
    known = _BELOW.get(id(buf))
    if known is not None and known[0] is buf:
        return known[1]
    out: list[str] = []
    for source, a, b in buf.pieces(buf.starts[0] if buf.starts else buf.base, buf.base):
        if source is not None:  # pieces cover from the first start on: no GAP here
            out += _rendered(source, b)[a - source.base : b - source.base]
    if len(_BELOW) >= BELOW_RENDERED:
        _BELOW.clear()
    _BELOW[id(buf)] = (buf, out)
    return out


def _fork(buf: _Buffer, n: int) -> _Buffer:
    """An empty buffer based at ``n`` that reads offsets below ``n`` as a view of ``buf``
    ending at ``n`` does: the pieces ``buf`` reads below ``n``, then ``buf``'s own records
    up to ``n``. Nothing is copied but the piece tuples, unless there are more than
    ``SEGMENTS`` pieces: then the two neighbouring pieces with the fewest records between
    them are merged into a fresh buffer (their copy costs what they hold, and the records
    of a long run end up in few large pieces)."""
    if n > buf.base:
        starts, sources = (*buf.starts, buf.base), (*buf.sources, buf)
    else:
        kept = bisect_left(buf.starts, n)
        starts, sources = buf.starts[:kept], buf.sources[:kept]
    if len(starts) > SEGMENTS:
        ends = (*starts[1:], n)
        i = min(range(len(starts) - 1), key=lambda j: ends[j + 1] - starts[j])
        merged = _Buffer(
            [*_records(sources[i], starts[i], ends[i]), *_records(sources[i + 1], starts[i + 1], ends[i + 1])],
            starts[i],
        )
        starts = (*starts[:i], starts[i], *starts[i + 2 :])
        sources = (*sources[:i], merged, *sources[i + 2 :])
    return _Buffer((), n, starts, sources)


def _first_difference(mine: _Buffer, theirs: _Buffer, start: int, n: int) -> int:
    """``Log.first_difference`` on two buffers (``n`` at most what both hold). Pieces two
    buffers read from one buffer hold the same records, so logs forked from one history
    are compared only where their pieces differ, not from their start: a leader change
    does not make whole logs be compared."""
    if mine is theirs or n <= start:
        return n
    key = (id(theirs), start)
    known = mine.agree.get(key)
    at = start
    if known is not None and known[0] is theirs:
        at, differs = known[1], known[2]
        if differs or n <= at:
            return min(at, n)
    at, differs = _compare(mine, theirs, at, n)
    if len(mine.agree) >= AGREEMENTS and key not in mine.agree:
        mine.agree.clear()
    mine.agree[key] = (theirs, at, differs)
    return at


def _compare(mine: _Buffer, theirs: _Buffer, at: int, n: int) -> tuple[int, bool]:
    """(where the buffers first differ in ``[at, n)`` or ``n``, whether they do): piece by
    piece, skipping the pieces both read from one buffer."""
    while at < n:
        a, end_a = mine.piece(at)
        b, end_b = theirs.piece(at)
        end = min(end_a, end_b, n)
        if a is not b:
            ours, other = _records(a, at, end), _records(b, at, end)
            if ours != other:
                for i, (x, y) in enumerate(zip(ours, other, strict=True)):
                    if x is not y and x != y:
                        return at + i, True
        at = end
    return n, False


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
