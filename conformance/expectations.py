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

from .fixtures import Problem


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
    out = Expectations()
    problems: list[Problem] = []
    for path in paths:
        file = str(path)
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as exc:
            problems.append(Problem(file, 1, "(file)", f"cannot read: {exc.strerror or exc}"))
            continue
        except yaml.MarkedYAMLError as exc:
            line = exc.problem_mark.line + 1 if exc.problem_mark else 1
            problems.append(Problem(file, line, "(yaml)", str(exc.problem or exc)))
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("implementation"), str):
            problems.append(Problem(file, 1, "implementation", "an expectations file needs 'implementation: NAME'"))
            continue
        failures = doc.get("expected_failures") or {}
        if not isinstance(failures, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in failures.items()
        ):
            problems.append(Problem(file, 1, "expected_failures", "must map fixture ids to a non-empty reason string"))
            continue
        extra = sorted(set(doc) - {"implementation", "expected_failures"})
        if extra:
            problems.append(Problem(file, 1, extra[0], "unknown field (allowed: implementation, expected_failures)"))
            continue
        out.by_impl.setdefault(doc["implementation"], {}).update(failures)
        out.sources[doc["implementation"]] = file
    return out, problems
