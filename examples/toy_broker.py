"""A toy replicated log, standing for "an existing system" to connect to kconform.

It knows nothing of kconform: its own classes, names and errors. One partition with a fixed
leader (no elections, no crashes), Kafka 0.11+ rules for the high watermark, the fetch
purgatory, acks and the ISR lag check. examples/toy_broker_adapter.py connects it to
kconform with the SDK in under 80 lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class NotAllowed(Exception):
    """The broker refuses the request in its current state."""


@dataclass
class Follower:
    name: str
    log: list[tuple[str, int]] = field(default_factory=list)
    hw: int = 0
    fetch_offset: int | None = None  # the leader's view (None: never fetched)
    caught_up_ms: int | None = 0
    last_fetch_leo: int = 0
    last_fetch_ms: int = 0
    waiting: tuple[int, int] | None = None  # a fetch parked at the leader: (offset, deadline)
    answer: tuple[list[tuple[str, int]], int] | None = None  # a response on its way: (records, hw)
    max_records: int | None = None


@dataclass
class Request:
    end: int
    acks: str
    deadline: int
    status: str = "pending"


class Broker:
    def __init__(self, names: list[str], leader: str, lag_ms: int, wait_ms: int, timeout_ms: int, min_isr: int) -> None:
        self.names, self.leader = list(names), leader
        self.lag, self.wait, self.timeout, self.min_isr = lag_ms, wait_ms, timeout_ms, min_isr
        self.log: list[tuple[str, int]] = []
        self.hw = 0
        self.now = 0
        self.followers = {n: Follower(n) for n in names if n != leader}
        self.isr = list(names)
        self.requests: dict[int, Request] = {}
        self.last_read: tuple[int, list[tuple[str, int]]] | None = None

    # --- the leader ------------------------------------------------------------------
    def _advance_hw(self) -> None:
        counted = [f for f in self.followers.values() if f.name in self.isr or self._caught_up(f)]
        if all(f.fetch_offset is not None for f in counted):
            self.hw = max(self.hw, min([len(self.log)] + [f.fetch_offset or 0 for f in counted]))
        for request in self.requests.values():
            if request.status == "pending" and self.hw >= request.end:
                request.status = "acked" if len(self.isr) >= self.min_isr else "NOT_ENOUGH_REPLICAS_AFTER_APPEND"

    def _caught_up(self, f: Follower) -> bool:
        return f.caught_up_ms is not None and self.now - f.caught_up_ms <= self.lag

    def append(self, values: list[str], acks: str) -> int:
        handle = len(self.requests)
        if acks == "all" and len(self.isr) < self.min_isr:
            self.requests[handle] = Request(len(self.log), acks, self.now, "NOT_ENOUGH_REPLICAS")
            return handle
        self.log += [(v, 0) for v in values]
        self.requests[handle] = Request(len(self.log), acks, self.now + self.timeout)
        if acks != "all":
            self.requests[handle].status = "acked" if acks == "1" else "sent"
        self._advance_hw()
        for f in self.followers.values():
            if f.waiting and f.waiting[0] < len(self.log):
                self._answer(f, f.waiting[0])
        return handle

    def _answer(self, f: Follower, offset: int) -> None:
        end = len(self.log) if f.max_records is None else min(len(self.log), offset + f.max_records)
        f.answer, f.waiting = (self.log[offset:end], self.hw), None

    def fetch(self, name: str, max_records: int | None) -> None:
        if name == self.leader:  # FETCH-PRE-1: the leader has no fetcher
            raise NotAllowed(f"{name} leads: only a follower fetches")
        f = self.followers[name]
        if f.waiting or f.answer:
            raise NotAllowed(f"{name} already has a fetch outstanding")
        offset, leo, hw_before = len(f.log), len(self.log), self.hw
        f.max_records = max_records
        if offset >= leo:
            f.caught_up_ms = self.now
        elif offset >= f.last_fetch_leo:
            f.caught_up_ms = f.last_fetch_ms
        f.fetch_offset, f.last_fetch_leo, f.last_fetch_ms = offset, leo, self.now
        if name not in self.isr and offset >= self.hw:
            self.isr = [n for n in self.names if n in self.isr or n == name]
        self._advance_hw()
        if offset < leo:
            end = leo if max_records is None else min(leo, offset + max_records)
            f.answer = (self.log[offset:end], hw_before)
        else:
            f.waiting = (offset, self.now + self.wait)

    # --- a follower -------------------------------------------------------------------
    def receive(self, name: str) -> None:
        f = self.followers[name]
        if f.answer is None:
            raise NotAllowed(f"no answer on its way to {name}")
        records, hw = f.answer
        f.log += records
        f.hw, f.answer = min(hw, len(f.log)), None

    # --- time ---------------------------------------------------------------------------
    def advance(self, ms: int) -> None:
        end = self.now + ms
        while True:
            period = self.lag // 2
            times = [f.waiting[1] for f in self.followers.values() if f.waiting and f.waiting[1] <= end]
            times += [r.deadline for r in self.requests.values() if r.status == "pending" and r.deadline <= end]
            check = (self.now // period + 1) * period
            if check <= end:
                times.append(check)
            if not times:
                break
            self.now = min(times)
            for f in self.followers.values():
                if f.waiting and f.waiting[1] == self.now:
                    self._answer(f, f.waiting[0])
            for r in self.requests.values():
                if r.status == "pending" and r.deadline == self.now:
                    r.status = "REQUEST_TIMED_OUT"
            if self.now % period == 0:
                late = [f.name for f in self.followers.values() if f.name in self.isr and not self._caught_up(f)]
                late = [n for n in late if self.followers[n].fetch_offset != len(self.log)]
                if late:
                    self.isr = [n for n in self.isr if n not in late]
                    self._advance_hw()
        self.now = end

    def read(self, offset: int) -> list[tuple[str, int]]:
        if offset > len(self.log):
            raise LookupError("OFFSET_OUT_OF_RANGE")
        return self.log[offset : self.hw]
