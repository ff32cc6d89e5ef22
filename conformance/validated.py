"""Fixture texts already found to fit the JSON Schemas, remembered across runs.

Checking a fixture file against ``spec/fixture.schema.json`` took most of the time
``kconform run`` spent loading the bundled fixtures (about 0.2 s of CPU of 0.35 s, plus
0.1 s to import jsonschema), and its verdict depends only on the file's text and the
schemas. So, as black remembers the files it already formatted, kconform keeps the
SHA-256 of every fixture text that fitted, one file per version of the schemas (named by
a digest of every ``spec/*.schema.json``, kconform's version and PyYAML's): a text found
there is not checked against the schema again, and jsonschema is not even imported. Only
the schema check is skipped; the model's checks (steps, replica names, config) and the
duplicate-key check run every time, and a text that does not fit is never remembered, so
its problems are reported in full on every run.

The cache folder is ``$KCONFORM_CACHE_DIR``, else ``$XDG_CACHE_HOME/kconform``, else
``~/.cache/kconform``; ``KCONFORM_CACHE_DIR=`` (empty) turns the cache off. It is an
optimisation only: a cache that cannot be read or written is ignored. Entries are
appended one line at a time (a single short ``write`` in append mode), so processes
loading fixtures at once (a replay's workers) do not lose each other's lines.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

from .paths import SCHEMA_DIR

MAX_ENTRIES = 100_000
"""A cache file with more lines than this is started afresh (a corpus of generated
fixture files should not grow it without bound)."""


def cache_dir() -> Path | None:
    """Where the cache files go; None when the cache is off."""
    return _cache_dir(os.environ.get("KCONFORM_CACHE_DIR"), os.environ.get("XDG_CACHE_HOME"))


@functools.cache
def _cache_dir(configured: str | None, xdg_cache_home: str | None) -> Path | None:
    if configured is not None:
        return Path(configured) if configured else None
    if xdg_cache_home:
        return Path(xdg_cache_home) / "kconform"
    try:
        return Path.home() / ".cache" / "kconform"
    except RuntimeError:  # no home folder to be found: no cache
        return None


@functools.cache
def _schemas_digest() -> str:
    import yaml

    from reference_impl import __version__

    digest = hashlib.sha256(f"kconform {__version__}; PyYAML {yaml.__version__}\n".encode())
    for path in sorted(SCHEMA_DIR.glob("*.schema.json")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def _cache_file() -> Path | None:
    folder = cache_dir()
    return None if folder is None else folder / f"valid-fixtures-{_schemas_digest()}.txt"


@functools.cache
def _known(cache_file: Path | None) -> set[str]:
    """The digests held by ``cache_file`` (read once per process)."""
    if cache_file is None:
        return set()
    try:
        lines = cache_file.read_text(encoding="ascii").split()
    except (OSError, UnicodeDecodeError):
        return set()
    return set(lines) if len(lines) <= MAX_ENTRIES else set()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fits(text: str) -> bool:
    """True if a fixture file with exactly this text was found to fit the schemas."""
    return _digest(text) in _known(_cache_file())


def remember(text: str) -> None:
    """Record that a fixture file with this text fits the schemas."""
    cache_file = _cache_file()
    known = _known(cache_file)
    digest = _digest(text)
    if cache_file is None or digest in known:
        return
    known.add(digest)
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        mode = "w" if len(known) == 1 or len(known) > MAX_ENTRIES else "a"
        with cache_file.open(mode, encoding="ascii") as out:
            out.write(digest + "\n")
    except OSError:
        pass  # an optimisation only: the next run checks the file again
