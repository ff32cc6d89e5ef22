"""Conformance levels: how strictly an implementation is held to the reference.

- ``exact``: after every step, every stated field the implementation reports equals the
  fixture's expectation (the reference's step-by-step behaviour);
- ``settled``: only at quiescent points (no fetch answer, epoch answer or LeaderAndIsr in
  flight on the reference's run, and the last checked step), only on outcome fields
  (``SETTLED_FIELDS``), and an observation passes if *some* reference path with the same
  visible steps plus a bounded number of internal steps reaches it (``settle.py``);
- ``safety``: no reference at all: the invariants of ``safety.py`` on the implementation's
  own observations.

Every level includes the safety properties: an implementation meets ``exact`` only if it is
also safe. A results record keeps the verdict at each level, so a report shows the highest
level an implementation meets whichever level was selected.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .safety import Coverage, certificate

LEVELS = ("exact", "settled", "safety")
"""Strictest first."""

SETTLED_FIELDS = ("leader", "leader_epoch", "isr", "producer", "consumer", "replicas")
SETTLED_REPLICA_FIELDS = ("online", "role", "leader", "leader_epoch", "leo", "hw", "log", "epoch_cache")


def settled_part(expect: dict[str, Any]) -> dict[str, Any]:
    """The outcome fields of an expectation (what ``settled`` compares)."""
    out: dict[str, Any] = {}
    for key, value in expect.items():
        if key not in SETTLED_FIELDS:
            continue
        if key == "replicas" and isinstance(value, dict):
            reps = {
                name: {f: v for f, v in fields_.items() if f in SETTLED_REPLICA_FIELDS}
                for name, fields_ in value.items()
            }
            reps = {name: f for name, f in reps.items() if f}
            if reps:
                out[key] = reps
        else:
            out[key] = value
    return out


def highest_level(verdicts: list[dict[str, str | None]]) -> str:
    """The strictest level every fixture meets (``none`` if even ``safety`` fails; ``-`` when
    nothing was judged). ``verdicts``: per fixture, level -> ``passed`` / ``failed`` / None."""
    judged = [v for v in verdicts if any(v.get(level) for level in LEVELS)]
    if not judged:
        return "-"
    for level in LEVELS:
        if all(v.get(level) in ("passed", None) for v in judged) and any(v.get(level) for v in judged):
            return level
    return "none"


def level_met(results: list[dict[str, Any]]) -> str:
    """What the summary's ``level met`` says of one implementation's results: the highest
    level every judged result meets, or why none can be named.

    - An errored result (the implementation crashed, hung or answered garbage) judged
      nothing, so no level is met while one remains: "not established: 3 of 136 errored".
    - Every level includes safety, and safety is met only as a certificate
      (``safety.certificate``): every required property checked at least once over the
      results. An implementation that refuses every step, reports ``{}`` or too few fields
      meets no level: "safety not established: SAFE-STRONG-ISR not checkable (...)".
    """
    judged = [r for r in results if r.get("outcome") != "skipped"]
    errored = sum(1 for r in judged if r.get("outcome") == "errored")
    if errored:
        return f"not established: {errored} of {len(judged)} errored"
    level = highest_level([r.get("levels") or {} for r in judged])
    if level in ("-", "none"):
        return level
    established, reason = certificate_of(judged)
    return level if established else reason


def coverage_record(coverage: Mapping[str, Coverage]) -> dict[str, dict[str, Any]]:
    """A run's safety coverage as plain data for the results record."""
    return {
        pid: {"checked": c.checked, "missing": list(c.missing), "applicable": c.applicable}
        for pid, c in coverage.items()
    }


def certificate_of(results: Iterable[Mapping[str, Any]]) -> tuple[bool, str]:
    """``safety.certificate`` over results records (their ``safety`` coverage)."""
    judged = [r for r in results if r.get("outcome") in ("passed", "failed")]
    coverages = [
        {
            pid: Coverage(int(c.get("checked", 0)), tuple(c.get("missing") or ()), bool(c.get("applicable")))
            for pid, c in (r.get("safety") or {}).items()
        }
        for r in judged
    ]
    return certificate(coverages, exercised_of(judged))


def exercised_of(results: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How often the reference evaluated each safety property over the same runs: a run's
    own count where it was computed (``runner.reference_coverage``), else its implementation's
    (which then checked it)."""
    out: dict[str, int] = {}
    for r in results:
        for pid, c in (r.get("safety") or {}).items():
            out[pid] = out.get(pid, 0) + int(c.get("exercised", c.get("checked", 0)))
    return out
