"""Expectation files: the fixtures an implementation is known to fail, with reasons.

In the manner of web-platform-tests' metadata, a YAML file per implementation:

    implementation: my-broker          # the --impl name or the name it reports
    expected_failures:
      kip-320-fencing: no KIP-320 epoch fencing yet (issue #12)
      seed-09-isr-shrink-expand: "our ISR check runs every second"

A key is a fixture id (``seed-01-normal-round/leader-epoch``) or a fixture file id
(``seed-01-normal-round``), which covers all its generations; a corpus trace id works the
same in ``kconform replay``. Such fixtures report XFAIL when they fail and XPASS when they
pass; only unexpected results fail the run.

The same file may list **known differences**: field paths or safety properties (globs, e.g.
``replicas.*.remote_leo`` or ``SAFE-EPOCH-CACHE``) whose failures are ignored wherever the
implementation is judged, with the reason:

    implementation: my-broker
    known_differences:
      replicas.*.epoch_cache: we keep no epoch cache (KIP-101 is done by truncating to the HW)

Every command reads this one format (``run``, ``replay``, ``fuzz``, ``explore``, the pytest
plugin): ids apply where runs have ids (fixtures, corpus traces), known differences
everywhere (a random run has no id). A file without ``implementation`` applies to every
implementation judged.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..fixtures.loading import PathKey, Problem, field_path, line_for, line_map

ANY = "*"
"""The implementation key of a file that names none: it applies to every implementation."""


@dataclass
class Expectations:
    """Expected failures per implementation (id or reported name)."""

    by_impl: dict[str, dict[str, str]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    known_by_impl: dict[str, dict[str, str]] = field(default_factory=dict)
    """Implementation (or ``*``: any) -> field path or property glob -> reason."""

    def known(self, impl_ids: tuple[str, ...]) -> dict[str, str]:
        """The known differences of an implementation known by any of ``impl_ids``."""
        out = dict(self.known_by_impl.get(ANY, {}))
        for impl in impl_ids:
            out.update(self.known_by_impl.get(impl, {}))
        return out

    def reason(self, impl_ids: tuple[str, ...], fixture_id: str, base_id: str) -> str | None:
        for impl in impl_ids:
            failures = self.by_impl.get(impl, {})
            for key in (fixture_id, base_id):
                if key in failures:
                    return failures[key]
        return None

    def unused(self, seen: set[tuple[str, str]]) -> list[str]:
        """Entries naming a fixture that was not run (stale or mistyped keys)."""
        out = []
        for impl, failures in self.by_impl.items():
            for key in failures:
                if not any(impl == i and (key == f or f.startswith(key + "/")) for i, f in seen):
                    out.append(f"{self.sources.get(impl, '?')}: {impl}: {key}")
        return out


def load_expectations(paths: list[Path]) -> tuple[Expectations, list[Problem]]:
    """Load expectations files; every problem as ``file:line: field: message``."""
    out = Expectations()
    problems: list[Problem] = []
    for path in paths:
        file = str(path)
        try:
            text = path.read_text(encoding="utf-8")
            node = yaml.compose(text, Loader=yaml.SafeLoader)
            doc = yaml.safe_load(text)
        except OSError as exc:
            problems.append(Problem(file, 0, "(file)", f"cannot read: {exc.strerror or exc}"))
            continue
        except yaml.MarkedYAMLError as exc:
            line = exc.problem_mark.line + 1 if exc.problem_mark else 1
            problems.append(Problem(file, line, "(yaml)", str(exc.problem or exc)))
            continue
        lines: dict[PathKey, int] = {}
        if node is not None:
            line_map(node, (), lines, [])
        problem = _check(doc)
        if problem is not None:
            key, message = problem
            problems.append(Problem(file, line_for(lines, key), field_path(key), message))
            continue
        impl = doc.get("implementation", ANY)
        out.by_impl.setdefault(impl, {}).update(doc.get("expected_failures") or {})
        out.known_by_impl.setdefault(impl, {}).update(doc.get("known_differences") or {})
        out.sources[impl] = file
    return out, problems


def _check(doc: object) -> tuple[PathKey, str] | None:
    """The first thing wrong with an expectations document, with its path."""
    if not isinstance(doc, dict):
        return ("implementation",), "an expectations file is a mapping with 'implementation: NAME'"
    if "implementation" in doc and not isinstance(doc["implementation"], str):
        return ("implementation",), "must be the implementation's name (--impl or the name it reports)"
    extra = sorted(set(doc) - {"implementation", "expected_failures", "known_differences"})
    if extra:
        return (extra[0],), "unknown field (allowed: implementation, expected_failures, known_differences)"
    if "implementation" not in doc and doc.get("expected_failures"):
        return ("implementation",), "expected_failures need 'implementation: NAME' (whose failures they are)"
    for key_name, what in (("expected_failures", "fixture ids"), ("known_differences", "field or property globs")):
        entries = doc.get(key_name) or {}
        if not isinstance(entries, dict):
            return (key_name,), f"must map {what} to a reason"
        for key, reason in entries.items():
            if not (isinstance(key, str) and isinstance(reason, str) and reason.strip()):
                return (key_name, str(key)), "the reason must be a non-empty string"
    return None


def is_known(failure: Mapping[str, Any], known: Mapping[str, str]) -> str | None:
    """The reason ``failure`` (a judge record) is a known difference, or None: its field
    path, or for a safety finding its property, matches a glob of ``known``."""
    if not known:
        return None
    name = str(failure.get("property") or failure.get("field") or "")
    for pattern, reason in known.items():
        if fnmatch.fnmatchcase(name, pattern):
            return reason
    return None
