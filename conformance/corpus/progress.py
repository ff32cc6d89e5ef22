"""Progress of a long run: done / total, rate and ETA, on one line; and the watcher that
counts a replay's results as workers write them.

On a terminal the line rewrites itself; elsewhere (a log file under ``nohup``) a line is
printed at most every ``interval_s`` seconds, so a million-trace run leaves a readable log.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Self, TextIO


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
        speed = _count(rate) if rate >= 10 else f"{rate:.1f}"
        return (
            f"[{_count(done)}/{_count(self.total)} {self.what} {pct:.0f}%] "
            f"{speed}/s, elapsed {_duration(elapsed)}, ETA {_duration(eta) if done else '?'}"
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


class ResultsWatcher:
    """Progress per result while workers write them: a thread counts the lines of the
    per-split results files in ``folder`` (``part-NNNNN.jsonl`` and the ``.tmp`` being
    written) every ``interval_s`` and reports the total to ``progress``. Every backend
    writes these files where the driver reads them (on a cluster, a shared file system),
    so progress moves per trace, not per split; splits in ``skip`` (kept from an earlier,
    interrupted replay) are not counted."""

    def __init__(self, folder: Path, progress: Progress, skip: Iterable[int] = (), interval_s: float = 0.5) -> None:
        self.folder, self.progress, self.interval_s = folder, progress, interval_s
        self.skip = {f"part-{i:05d}.jsonl" for i in skip}
        self._seen: dict[str, tuple[int, int]] = {}
        """File name -> (bytes read, lines counted)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kconform-progress", daemon=True)

    def __enter__(self) -> Self:
        if self.progress.enabled:
            self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(2.0)

    def count(self) -> int:
        """Results written so far (each split counted once: its finished file, else its ``.tmp``)."""
        per_split: dict[str, int] = {}
        try:
            names = [p.name for p in self.folder.iterdir() if p.name.startswith("part-")]
        except OSError:
            return 0
        for name in names:
            base = name.removesuffix(".tmp")
            if not base.endswith(".jsonl") or base in self.skip:
                continue
            lines = self._lines(name)
            per_split[base] = max(per_split.get(base, 0), lines)
        return sum(per_split.values())

    def _lines(self, name: str) -> int:
        offset, lines = self._seen.get(name, (0, 0))
        try:
            with open(self.folder / name, "rb") as f:
                f.seek(offset)
                chunk = f.read()
        except OSError:
            return lines
        last = chunk.rfind(b"\n") + 1  # only whole lines; a line being written is counted next time
        offset, lines = offset + last, lines + chunk.count(b"\n", 0, last)
        self._seen[name] = (offset, lines)
        return lines

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.progress.update(self.count())


class PartsWatcher(ResultsWatcher):
    """Progress per trace while ``generate`` writes its parts: each part being written
    keeps its trace count in ``NAME.tmp.count`` (``write_part``), a finished part counts
    whole (``counts``: part file name -> traces)."""

    def __init__(self, folder: Path, progress: Progress, counts: dict[str, int], interval_s: float = 0.5) -> None:
        super().__init__(folder, progress, interval_s=interval_s)
        self.counts = counts

    def count(self) -> int:
        done = 0
        for name, traces in self.counts.items():
            if (self.folder / name).exists():
                done += traces
                continue
            try:
                done += int((self.folder / f"{name}{COUNT_SUFFIX}").read_text(encoding="ascii") or 0)
            except (OSError, ValueError):
                continue
        return done


COUNT_SUFFIX = ".tmp.count"
"""Beside a part being written: how many traces it holds so far."""
