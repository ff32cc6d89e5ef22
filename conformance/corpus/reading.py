"""Corpus files cut into splits: the unit of work every backend hands to a worker.

A corpus is any mix of ``.jsonl`` files (cut at line boundaries into byte ranges),
``.jsonl.gz`` part files (read whole; gzip cannot seek) and YAML fixture files (the
bundled ``fixtures/`` replays as a corpus). A folder is searched recursively. A split
knows its file, byte range, first line number and line count, so every problem is
reported as ``file:line`` and progress knows the total before anything runs. Files are
read by the workers themselves, never shipped through the driver; on a cluster the paths
must be readable from every worker (a shared file system).

``corpus-manifest.json`` (written by ``kconform generate``) gives the line count of each
part, so planning a generated corpus does not decompress it.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..fixtures import FixtureError, Problem, load_fixture_file
from .format import CorpusLineError, Trace, parse_line

MANIFEST = "corpus-manifest.json"
SPLIT_LINES = 1000
"""Traces per split at most (the task size, and the progress granularity)."""


class CorpusError(Exception):
    """A corpus path that cannot be used at all (missing, not a corpus file)."""


@dataclass(frozen=True)
class Split:
    """Lines ``first_line .. first_line + lines - 1`` of ``path``: for ``.jsonl`` also its
    byte range ``start..end``; a ``.jsonl.gz`` split decompresses its file from the start
    and skips the lines before its own (cheap next to replaying them)."""

    path: str
    kind: str
    """``jsonl``, ``jsonl.gz`` or ``yaml``."""
    start: int
    end: int
    first_line: int
    lines: int
    """Traces expected in the split (for progress; a YAML file counts its fixtures)."""


def _kind(path: Path) -> str | None:
    name = path.name
    if name.endswith(".jsonl.gz"):
        return "jsonl.gz"
    if name.endswith(".jsonl"):
        return "jsonl"
    if path.suffix in (".yaml", ".yml"):
        return "yaml"
    return None


def corpus_files(paths: Iterable[Path]) -> list[Path]:
    """Every corpus file named by ``paths`` (folders searched recursively), sorted within
    each folder; raise ``CorpusError`` for a path that does not exist or is not one."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = sorted(q for q in p.rglob("*") if q.is_file() and _kind(q))
            if not found:
                raise CorpusError(f"{p}: no corpus files (*.jsonl, *.jsonl.gz, *.yaml) in this folder")
            out += found
        elif p.is_file():
            if _kind(p) is None:
                raise CorpusError(f"{p}: not a corpus file (*.jsonl, *.jsonl.gz, *.yaml, *.yml)")
            out.append(p)
        else:
            raise CorpusError(f"{p}: no such file or folder")
    return out


def manifest_revisions(files: Iterable[Path]) -> dict[str, str]:
    """Per corpus folder holding ``files``, the ``reference_revision`` its manifest records
    (folders without a manifest or without the field are left out)."""
    out: dict[str, str] = {}
    for folder in dict.fromkeys(f.parent for f in files):
        try:
            revision = json.loads((folder / MANIFEST).read_text(encoding="utf-8")).get("reference_revision")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(revision, str):
            out[str(folder)] = revision
    return out


def _manifest_counts(folder: Path) -> dict[str, int]:
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        return {str(folder / part["file"]): int(part["traces"]) for part in data.get("parts", [])}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def plan_splits(paths: Iterable[Path], split_lines: int = SPLIT_LINES) -> list[Split]:
    """Cut the corpus into splits; raise ``CorpusError`` for unusable paths."""
    splits: list[Split] = []
    manifests: dict[Path, dict[str, int]] = {}
    for file in corpus_files(paths):
        kind = _kind(file)
        name = str(file)
        if kind == "jsonl":
            splits += _plan_jsonl(file, split_lines)
        elif kind == "jsonl.gz":
            counts = manifests.setdefault(file.parent, _manifest_counts(file.parent))
            lines = counts.get(name)
            if lines is None:
                with gzip.open(file, "rb") as f:
                    lines = sum(1 for _ in f)
            size = _even(lines, split_lines)
            for first in range(1, lines + 1, size):
                splits.append(Split(name, "jsonl.gz", 0, -1, first, min(size, lines - first + 1)))
        else:
            try:
                count = len(load_fixture_file(file))
            except FixtureError:
                count = 1  # reported (and counted) when the split is read
            splits.append(Split(name, "yaml", 0, -1, 1, count))
    return splits


def _even(lines: int, most: int) -> int:
    """Split size: at most ``most`` lines, the splits of one file as even as possible."""
    parts = max(1, -(-lines // most))
    return max(1, -(-lines // parts))


def _plan_jsonl(file: Path, split_lines: int) -> list[Split]:
    with file.open("rb") as f:
        split_lines = _even(sum(1 for _ in f), split_lines)
    out: list[Split] = []
    start, first, n, offset, line = 0, 1, 0, 0, 0
    with file.open("rb") as f:
        for raw in f:
            line += 1
            offset += len(raw)
            n += 1
            if n == split_lines:
                out.append(Split(str(file), "jsonl", start, offset, first, n))
                start, first, n = offset, line + 1, 0
    if n:
        out.append(Split(str(file), "jsonl", start, offset, first, n))
    return out


Item = Trace | CorpusLineError


def read_split(split: Split) -> Iterator[Item]:
    """The traces of a split, or the error of each line that is not one (blank lines
    are skipped). Never raises for bad content: a problem is an item, so it is counted."""
    if split.kind == "yaml":
        yield from _read_yaml(split.path)
        return
    line = split.first_line
    try:
        for line, raw in _lines(split):
            if not raw.strip():
                continue
            try:
                yield parse_line(raw, split.path, line)
            except CorpusLineError as exc:
                yield exc
    except (OSError, EOFError, gzip.BadGzipFile) as exc:  # unreadable or truncated: one error, counted
        yield CorpusLineError(split.path, line, "(file)", f"cannot read: {type(exc).__name__}: {exc}")


def _lines(split: Split) -> Iterator[tuple[int, bytes]]:
    if split.kind == "jsonl.gz":
        last = split.first_line + split.lines - 1
        with gzip.open(split.path, "rb") as f:
            for line, raw in enumerate(f, start=1):
                if line > last:
                    break
                if line >= split.first_line:
                    yield line, raw
        return
    with open(split.path, "rb") as f:
        f.seek(split.start)
        remaining = split.end - split.start
        line = split.first_line
        while remaining > 0:
            raw = f.readline()
            if not raw:
                break
            remaining -= len(raw)
            yield line, raw
            line += 1


def _read_yaml(path: str) -> Iterator[Item]:
    try:
        fixtures = load_fixture_file(Path(path))
    except FixtureError as exc:
        first: Problem = exc.problems[0]
        more = f" (and {len(exc.problems) - 1} more problems)" if len(exc.problems) > 1 else ""
        yield CorpusLineError(first.file, first.line, first.field, first.message + more)
        return
    for fixture in fixtures:
        yield Trace(fixture, None, {"fixture": path})


def count_lines(splits: Iterable[Split]) -> int:
    return sum(s.lines for s in splits)


def manifest(parts: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    """The manifest ``kconform generate`` writes beside its part files."""
    return {"corpus": 1, **fields, "parts": parts}
