"""Expectation files: the fixtures an implementation is known to fail, with reasons.

In the manner of web-platform-tests' metadata, a YAML file per implementation:

    implementation: my-broker          # the --impl name or the name it reports
    expected_failures:
      kip-320-fencing: no KIP-320 epoch fencing yet (issue #12)
      seed-09-isr-shrink-expand: "our ISR check runs every second"

A key is a fixture id (``seed-01-normal-round/leader-epoch``) or a fixture file id
(``seed-01-normal-round``), which covers all its generations. Such fixtures report XFAIL
when they fail and XPASS when they pass; only unexpected results fail the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .fixtures import PathKey, Problem, field_path, line_for, line_map


@dataclass
class Expectations:
    """Expected failures per implementation (id or reported name)."""

    by_impl: dict[str, dict[str, str]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)

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
        out.by_impl.setdefault(doc["implementation"], {}).update(doc.get("expected_failures") or {})
        out.sources[doc["implementation"]] = file
    return out, problems


def _check(doc: object) -> tuple[PathKey, str] | None:
    """The first thing wrong with an expectations document, with its path."""
    if not isinstance(doc, dict) or not isinstance(doc.get("implementation"), str):
        return ("implementation",), "an expectations file needs 'implementation: NAME'"
    extra = sorted(set(doc) - {"implementation", "expected_failures"})
    if extra:
        return (extra[0],), "unknown field (allowed: implementation, expected_failures)"
    failures = doc.get("expected_failures") or {}
    if not isinstance(failures, dict):
        return ("expected_failures",), "must map fixture ids to a reason"
    for key, reason in failures.items():
        if not (isinstance(key, str) and isinstance(reason, str) and reason.strip()):
            return ("expected_failures", str(key)), "the reason must be a non-empty string"
    return None
