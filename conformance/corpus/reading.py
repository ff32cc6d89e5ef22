"""Corpus files cut into splits: the unit of work every backend hands to a worker.

A corpus is any mix of ``.jsonl`` files (cut at line boundaries into byte ranges),
``.jsonl.gz`` part files (read whole; gzip cannot seek), YAML fixture files (the
bundled ``fixtures/`` replays as a corpus) and ITF traces (``.itf.json``, one trace a
file: ``conformance/corpus/itf.py``). A folder is searched recursively. A split
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
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..fixtures.loading import Fixture, FixtureError, Problem, load_fixture_file
from .format import CorpusLineError, Trace, parse_line, record_to_trace
from .itf import ItfError, read_itf

MANIFEST = "corpus-manifest.json"
SPLIT_LINES = 1000
"""Traces per split at most (the task size, and the progress granularity)."""


class CorpusError(Exception):
    """A corpus path that cannot be used at all (missing, not a corpus file)."""


@dataclass(frozen=True)
class Split:
    """File lines ``first_line ..`` of ``path`` holding ``lines`` traces (blank lines are
    not traces: they are skipped and not counted). A ``.jsonl`` split is the byte range
    ``start..end``; a ``.jsonl.gz`` split is the file lines ``first_line..end`` (it
    decompresses its file from the start and skips the lines before its own, cheap next
    to replaying them)."""

    path: str
    kind: str
    """``jsonl``, ``jsonl.gz`` or ``yaml``."""
    start: int
    end: int
    first_line: int
    lines: int
    """Traces expected in the split (for progress and totals; a YAML file counts its
    fixtures; an unreadable rest of a ``.jsonl.gz`` file counts as one line)."""


def _kind(path: Path) -> str | None:
    name = path.name
    if name.endswith(".itf.json"):
        return "itf"
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
                raise CorpusError(f"{p}: no corpus files (*.jsonl, *.jsonl.gz, *.yaml, *.itf.json) in this folder")
            out += found
        elif p.is_file():
            if _kind(p) is None:
                raise CorpusError(f"{p}: not a corpus file (*.jsonl, *.jsonl.gz, *.yaml, *.yml, *.itf.json)")
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
            splits += _plan_gz(file, counts.get(name), split_lines)
        elif kind == "itf":
            splits.append(Split(name, "itf", 0, -1, 1, 1))
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


def _plan_gz(file: Path, traces: int | None, split_lines: int) -> list[Split]:
    """Splits of a ``.jsonl.gz`` file by file line: the manifest's trace count (no blank
    lines in a generated part), else the lines counted by decompressing it; a file that
    stops being readable counts its readable lines plus one for the error."""
    if traces is not None:
        lines = [True] * traces
    else:
        lines = []
        try:
            with gzip.open(file, "rb") as f:
                for raw in f:
                    lines.append(bool(raw.strip()))
        except _READ_ERRORS:
            lines.append(True)  # the unreadable rest: one errored line, reported when read
    return _cut(str(file), "jsonl.gz", [(n, 0) for n in lines], split_lines)


def _plan_jsonl(file: Path, split_lines: int) -> list[Split]:
    with file.open("rb") as f:
        lines = [(bool(raw.strip()), len(raw)) for raw in f]
    return _cut(str(file), "jsonl", lines, split_lines)


def _cut(name: str, kind: str, lines: list[tuple[bool, int]], split_lines: int) -> list[Split]:
    """Cut a file's lines (is it a trace, its bytes) into splits of at most
    ``split_lines`` traces, as even as possible; blank lines belong to a split's range
    but are not counted."""
    size = _even(sum(1 for trace, _ in lines if trace), split_lines)
    out: list[Split] = []
    start, first, n, offset = 0, 1, 0, 0
    for line, (trace, length) in enumerate(lines, start=1):
        offset += length
        n += trace
        if n == size:
            out.append(Split(name, kind, start, offset if kind == "jsonl" else line, first, n))
            start, first, n = offset, line + 1, 0
    if first <= len(lines):
        out.append(Split(name, kind, start, offset if kind == "jsonl" else len(lines), first, n))
    return out


_READ_ERRORS = (OSError, EOFError, zlib.error)
"""What reading a damaged file raises (``gzip.BadGzipFile`` is an ``OSError``)."""


def _read_problem(exc: BaseException) -> str:
    """The reason a file stopped being readable, in words (not a Python exception)."""
    if isinstance(exc, gzip.BadGzipFile):
        return "not a gzip file (the name ends in .gz)"
    if isinstance(exc, EOFError):
        return "truncated gzip file (the compressed data ends early)"
    if isinstance(exc, zlib.error):
        return f"corrupt gzip data ({exc})"
    if isinstance(exc, OSError) and exc.strerror:
        return f"cannot read: {exc.strerror}"
    return f"cannot read: {exc}"


Item = Trace | CorpusLineError


def read_split(split: Split) -> Iterator[Item]:
    """The traces of a split, or the error of each line that is not one (blank lines
    are skipped). Never raises for bad content: a problem is an item, so it is counted."""
    if split.kind == "yaml":
        yield from _read_yaml(split.path)
        return
    if split.kind == "itf":
        yield read_itf_trace(split.path)
        return
    line = 0
    try:
        for line, raw in _lines(split):
            if line < split.first_line or not raw.strip():
                continue
            try:
                yield parse_line(raw, split.path, line)
            except CorpusLineError as exc:
                yield exc
    except _READ_ERRORS as exc:  # unreadable or truncated: one error, counted, at the first line not read
        failed = max(line, split.first_line - 1) + 1 if split.kind == "jsonl" else line + 1
        if split.kind == "jsonl" or split.first_line <= failed <= split.end:
            yield CorpusLineError(
                split.path, failed, "(file)", f"{_read_problem(exc)}; lines from {failed} on are not replayed"
            )


def _lines(split: Split) -> Iterator[tuple[int, bytes]]:
    if split.kind == "jsonl.gz":
        with gzip.open(split.path, "rb") as f:
            for line, raw in enumerate(f, start=1):
                if line > split.end:
                    break
                yield line, raw  # the lines before the split's own too, so a failure is placed
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


def read_itf_trace(path: str) -> Item:
    try:
        record = read_itf(Path(path))
        return record_to_trace(record, path, 1)
    except ItfError as exc:
        return CorpusLineError(path, 1, exc.where or "(file)", exc.message)
    except CorpusLineError as exc:  # a step of the record is states[i + 1] of the ITF trace
        field = re.sub(r"^steps\[(\d+)\]", lambda m: f"states[{int(m.group(1)) + 1}]", exc.field)
        return CorpusLineError(path, 1, field, exc.message)


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


def iter_fixtures(paths: list[Path]) -> Iterator[Fixture]:
    """Every trace of the given corpus paths (fixture files, witnesses, corpus files, ITF), for
    ``kconform itf export``; a line that is not a trace raises ``ItfError``."""
    for split in plan_splits(paths):
        for item in read_split(split):
            if isinstance(item, CorpusLineError):
                raise ItfError(item.file, f"line {item.line}", f"{item.field}: {item.message}")
            yield item.fixture
