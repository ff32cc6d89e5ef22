"""Progress of a long run: done / total, rate and ETA, on one line.

On a terminal the line rewrites itself; elsewhere (a log file under ``nohup``) a line is
printed at most every ``interval_s`` seconds, so a million-trace run leaves a readable log.
"""

from __future__ import annotations

import shutil
import time
from typing import TextIO


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _count(n: float) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.2f}M"
    if n >= 10_000:
        return f"{n / 1000:.1f}k"
    return f"{n:.0f}"


class Progress:
    """``update(done)`` as work completes; ``close()`` clears a terminal line."""

    def __init__(self, total: int, what: str, stream: TextIO, enabled: bool = True, interval_s: float = 30.0) -> None:
        self.total, self.what, self.stream = total, what, stream
        self.enabled = enabled
        self.tty = enabled and stream.isatty()
        self.interval_s = interval_s if not self.tty else 0.2
        self.started = time.perf_counter()
        self._last = 0.0
        self.done = 0

    def line(self, done: int) -> str:
        elapsed = time.perf_counter() - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - done) / rate if rate > 0 else 0.0
        pct = 100.0 * done / self.total if self.total else 100.0
        return (
            f"[{_count(done)}/{_count(self.total)} {self.what} {pct:.0f}%] "
            f"{_count(rate)}/s, elapsed {_duration(elapsed)}, ETA {_duration(eta) if done else '?'}"
        )

    def update(self, done: int, force: bool = False) -> None:
        self.done = done
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self._last < self.interval_s:
            return
        self._last = now
        text = self.line(done)
        if self.tty:
            width = shutil.get_terminal_size((100, 20)).columns
            self.stream.write("\r" + text[: width - 1].ljust(width - 1))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\r" + " " * (shutil.get_terminal_size((100, 20)).columns - 1) + "\r")
            self.stream.flush()
