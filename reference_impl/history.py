"""``History``: an immutable, append-mostly sequence with lookup by key, for the state's
history variables (producer outcomes, committed records) that only grow.

A tuple would make every append copy the whole history; a history keeps its items in
full chunks of ``CHUNK`` plus a short tail, so appending copies at most one chunk's worth
and the list of chunks grows only once per ``CHUNK`` appends; replacing an item copies
one chunk. Lookup by key goes through an index shared by every history descended from
the same empty one: it maps a key to the positions it was ever appended at (in any
descendant), and a position counts only if this history holds that key there. So a
history value never changes, whatever its descendants do.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from itertools import chain
from typing import Generic, TypeVar

T = TypeVar("T")

CHUNK = 64


class History(Generic[T]):
    __slots__ = ("_chunks", "_hash", "_index", "_key", "_n", "_tail")

    def __init__(
        self,
        key: Callable[[T], Hashable] | None,
        chunks: tuple[tuple[T, ...], ...] = (),
        tail: tuple[T, ...] = (),
        index: dict[Hashable, list[int]] | None = None,
    ) -> None:
        self._key = key
        self._chunks = chunks
        self._tail = tail
        self._n = len(chunks) * CHUNK + len(tail)
        self._index: dict[Hashable, list[int]] = {} if index is None else index
        self._hash: int | None = None

    def __len__(self) -> int:
        return self._n

    def __bool__(self) -> bool:
        return self._n > 0

    def __iter__(self) -> Iterator[T]:
        return chain(chain.from_iterable(self._chunks), self._tail)

    def __getitem__(self, position: int) -> T:
        if position < 0:
            position += self._n
        if not 0 <= position < self._n:
            raise IndexError("history position out of range")
        chunk, offset = divmod(position, CHUNK)
        if chunk == len(self._chunks):
            return self._tail[offset]
        return self._chunks[chunk][offset]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, History):
            if self._n != other._n:
                return False
            if len(self._chunks) == len(other._chunks):
                # the same length lays items out alike (full chunks, then the tail): compare
                # the tuples as they are, each shared chunk at once by identity (a search
                # compares every state it reaches again with the one it knows)
                return self._chunks == other._chunks and self._tail == other._tail
            return list(self) == list(other)
        if isinstance(other, tuple):
            return tuple(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        # O(1), consistent with ``==`` between histories (same length and last item);
        # computed once per history (a state's hash includes two histories that most steps
        # leave as they are, and ``kconform explore`` hashes every state it reaches)
        h = self._hash
        if h is None:
            n = self._n
            h = self._hash = hash((n, (self._tail[-1] if self._tail else self._chunks[-1][-1]) if n else None))
        return h

    def __getstate__(self) -> dict[str, object]:
        """The slots but the cached hash (a string's hash differs between processes)."""
        return {name: getattr(self, name) for name in ("_chunks", "_index", "_key", "_n", "_tail")}

    def __setstate__(self, fields: dict[str, object]) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)
        self._hash = None

    def __repr__(self) -> str:
        return f"History({list(self)!r})"

    def _keyed(self, item: T) -> Hashable:
        return item if self._key is None else self._key(item)

    def append(self, item: T) -> History[T]:
        key = self._key
        positions = self._index.setdefault(item if key is None else key(item), [])
        if self._n not in positions:
            positions.append(self._n)
        tail = (*self._tail, item)
        if len(tail) == CHUNK:
            return _make(self._key, (*self._chunks, tail), (), self._index, self._n + 1)
        return _make(self._key, self._chunks, tail, self._index, self._n + 1)

    def extend(self, items: Iterable[T]) -> History[T]:
        """This history with ``items`` appended (O(len(items)) plus one chunk)."""
        added = list(items)
        if not added:
            return self
        index_setdefault = self._index.setdefault
        for position, item in enumerate(added, start=self._n):
            positions = index_setdefault(self._keyed(item), [])
            if position not in positions:
                positions.append(position)
        pending = [*self._tail, *added]
        cut = len(pending) - len(pending) % CHUNK
        chunks = self._chunks + tuple(tuple(pending[i : i + CHUNK]) for i in range(0, cut, CHUNK))
        return History(self._key, chunks, tuple(pending[cut:]), self._index)

    def starts_with(self, other: History[T]) -> bool:
        """Whether ``other`` is a prefix of this history (O(1) per shared chunk)."""
        if other._n > self._n:
            return False
        k = len(other._chunks)
        if self._chunks[:k] != other._chunks:
            return False
        if not other._tail:
            return True
        held = self._chunks[k] if k < len(self._chunks) else self._tail
        return held[: len(other._tail)] == other._tail

    def changed_since(self, other: History[T]) -> list[T] | None:
        """The items of this history at the positions where it may differ from ``other``
        (a chunk that is not the very chunk ``other`` has there, and the tail), in order;
        None when this history is shorter. A copy-free way to follow a history that only
        grows and replaces items (``observe.Observer``): O(chunks) identity tests."""
        if self._n < other._n:
            return None
        mine, theirs = self._chunks, other._chunks
        out: list[T] = []
        for i, chunk in enumerate(mine):
            if i >= len(theirs) or chunk is not theirs[i]:
                out += chunk
        out += self._tail
        return out

    def positions(self, key: Hashable) -> int:
        """How many items with ``key`` this history's index knows (at most one in a
        history of unique keys)."""
        return len(self._index.get(key, ()))

    def replace(self, position: int, item: T) -> History[T]:
        """This history with the item at ``position`` replaced by one with the same key."""
        chunk, offset = divmod(position, CHUNK)
        if chunk == len(self._chunks):
            tail = (*self._tail[:offset], item, *self._tail[offset + 1 :])
            return History(self._key, self._chunks, tail, self._index)
        old = self._chunks[chunk]
        chunks = (*self._chunks[:chunk], (*old[:offset], item, *old[offset + 1 :]), *self._chunks[chunk + 1 :])
        return History(self._key, chunks, self._tail, self._index)

    def find(self, key: Hashable) -> int | None:
        """The position of the item with ``key`` in this history, or None."""
        positions = self._index.get(key)
        if not positions:
            return None
        n, full, keyed = self._n, len(self._chunks) * CHUNK, self._keyed
        for position in positions:
            if position < n:
                held = (
                    self._tail[position - full]
                    if position >= full
                    else self._chunks[position // CHUNK][position % CHUNK]
                )
                if keyed(held) == key:
                    return position
        return None

    def _slice(self, start: int, stop: int) -> list[T]:
        """The items at positions ``[start, stop)`` (within the history)."""
        out: list[T] = []
        full = len(self._chunks) * CHUNK
        while start < stop:
            if start >= full:
                out += self._tail[start - full : stop - full]
                break
            chunk, offset = divmod(start, CHUNK)
            piece = self._chunks[chunk][offset : offset + stop - start]
            out += piece
            start += len(piece)
        return out

    def missing(self, items: Sequence[T]) -> list[T]:
        """The ``items`` this history does not hold (compared whole, found by key).

        When the history holds them as one run, in order (a consume reading what was
        committed before), that run is compared at once."""
        if items:
            first = self.find(self._keyed(items[0]))
            stop = None if first is None else first + len(items)
            if stop is not None and stop <= self._n and self._slice(stop - len(items), stop) == list(items):
                return []
        index_get, n, key, chunks, tail = self._index.get, self._n, self._key, self._chunks, self._tail
        full = len(chunks) * CHUNK
        out = []
        for item in items:
            for position in index_get(item if key is None else key(item), ()):
                if position < n:
                    held = tail[position - full] if position >= full else chunks[position // CHUNK][position % CHUNK]
                    if held == item:
                        break
            else:
                out.append(item)
        return out

    def __contains__(self, item: object) -> bool:
        try:
            position = self.find(self._keyed(item))  # type: ignore[arg-type]
        except (TypeError, AttributeError):
            return False
        return position is not None and self[position] == item


def _make(
    key: Callable[[T], Hashable] | None,
    chunks: tuple[tuple[T, ...], ...],
    tail: tuple[T, ...],
    index: dict[Hashable, list[int]],
    n: int,
) -> History[T]:
    """``History(key, chunks, tail, index)`` of a known length ``n`` (on the path of
    every append)."""
    made: History[T] = _new(History)
    made._key = key
    made._chunks = chunks
    made._tail = tail
    made._n = n
    made._index = index
    made._hash = None
    return made


_new = object.__new__
