"""What an implementation cannot be asked: config ranges and features it lacks.

An implementation declares ``capabilities.limits`` (spec/adapter-protocol.md, "Limits"):

    "limits": {"config": {"min_insync_replicas": {"values": [2]},
                          "replica_fetch_wait_max_ms": {"max": 0}},
               "without": ["produce_timeout", "unclean_election", "fetch_wait", "controller"]}

A fixture (or a fuzz, explore or corpus run) that needs what it lacks is **skipped with the
reason**, never failed: a config outside a range; a produce that times out in the
reference's run (PRODUCE-7) for ``produce_timeout``; an unclean election in the reference's
run (CTRL-ELECT-2) for ``unclean_election``; a fetch parked in the leader's purgatory
(FETCH-PARK-1) for ``fetch_wait``; a controller decision (an ``elect`` step, a LeaderAndIsr
or AlterPartition answer delivered) for ``controller``. ``fuzz`` draws configs inside the
ranges and never draws the controller's steps for an implementation without one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields, replace
from typing import Any

from reference_impl import Config

FEATURES: dict[str, tuple[str, str]] = {
    "produce_timeout": ("PRODUCE-7", "a produce times out"),
    "unclean_election": ("CTRL-ELECT-2", "an unclean election happens"),
    "fetch_wait": ("FETCH-PARK-1", "a fetch is parked in the leader's purgatory"),
    "controller": ("", "a controller decision is needed"),
}
"""Feature -> (the rule whose firing in the reference's run needs it, what that means)."""

CONTROLLER_KINDS = frozenset({"elect", "deliver_leader_and_isr", "deliver_alter_partition"})
"""Step kinds that carry a controller decision (``without: [controller]`` skips them)."""

CONFIG_FIELDS = frozenset(f.name for f in fields(Config)) - {"replicas", "generation"}


class LimitsError(ValueError):
    """A malformed ``limits`` capability (the message names the field)."""


def check(limits: Mapping[str, Any]) -> None:
    """Raise ``LimitsError`` if ``limits`` is not of the documented form."""
    if not isinstance(limits, Mapping):
        raise LimitsError("limits: must be a mapping with 'config' and/or 'without'")
    extra = sorted(set(limits) - {"config", "without"})
    if extra:
        raise LimitsError(f"limits.{extra[0]}: unknown (allowed: config, without)")
    config = limits.get("config") or {}
    if not isinstance(config, Mapping):
        raise LimitsError("limits.config: must map config fields to {values: [...]} or {min, max}")
    for name, rng in config.items():
        where = f"limits.config.{name}"
        if name not in CONFIG_FIELDS:
            raise LimitsError(f"{where}: not a config field ({', '.join(sorted(CONFIG_FIELDS))})")
        if not isinstance(rng, Mapping) or not rng or set(rng) - {"values", "min", "max"}:
            raise LimitsError(f"{where}: must be {{values: [...]}} or {{min: N, max: N}}")
        if "values" in rng and (not isinstance(rng["values"], list) or not rng["values"]):
            raise LimitsError(f"{where}.values: must be a non-empty list")
    without = limits.get("without") or []
    if not isinstance(without, list) or any(w not in FEATURES for w in without):
        raise LimitsError(f"limits.without: a list of {', '.join(FEATURES)}")


def _inside(value: Any, rng: Mapping[str, Any]) -> bool:
    if "values" in rng:
        return value in rng["values"]
    low, high = rng.get("min"), rng.get("max")
    return (low is None or value >= low) and (high is None or value <= high)


def _describe(rng: Mapping[str, Any]) -> str:
    if "values" in rng:
        return "one of " + ", ".join(str(v) for v in rng["values"])
    return " to ".join(str(rng.get(k, "...")) for k in ("min", "max"))


def config_reason(config: Config, limits: Mapping[str, Any]) -> str | None:
    """Why ``config`` is outside ``limits``, or None."""
    ranges = dict(limits.get("config") or {})
    if "unclean_election" in (limits.get("without") or ()):
        ranges.setdefault("unclean_leader_election", {"values": [False]})
    for name, rng in ranges.items():
        value = getattr(config, name)
        if name == "unclean_leader_election" and "unclean_election" in (limits.get("without") or ()):
            continue  # judged by what happens (an unclean election), not by the setting
        if not _inside(value, rng):
            return f"config {name}={value} is outside the implementation's limits ({_describe(rng)})"
    return None


def run_reason(kinds: Iterable[str], rules: Sequence[Sequence[str]], limits: Mapping[str, Any]) -> str | None:
    """Why a run with these step kinds, where the reference fires ``rules`` (per step), needs
    a feature the implementation is ``without``, or None."""
    lacking = list(limits.get("without") or ())
    if not lacking:
        return None
    if "controller" in lacking:
        for n, kind in enumerate(kinds, 1):
            if kind in CONTROLLER_KINDS:
                return f"step {n} ({kind}) needs a controller decision; the implementation has no controller of its own"
    for feature in lacking:
        rule, what = FEATURES[feature]
        for n, fired in enumerate(rules, 1):
            if rule and rule in fired:
                return f"at step {n} {what} ({rule}), which the implementation is without ({feature})"
    return None


def fit(config: Config, limits: Mapping[str, Any]) -> Config:
    """``config`` moved inside ``limits`` (for fuzz's drawn configs): a value outside a list
    becomes its first value, one outside a range the nearer bound."""
    changes: dict[str, Any] = {}
    for name, rng in (limits.get("config") or {}).items():
        value = getattr(config, name)
        if _inside(value, rng):
            continue
        if "values" in rng:
            changes[name] = rng["values"][0]
        else:
            low, high = rng.get("min"), rng.get("max")
            changes[name] = low if low is not None and value < low else high
    if "unclean_election" in (limits.get("without") or ()):
        changes["unclean_leader_election"] = False
    if "min_insync_replicas" in changes:
        changes["min_insync_replicas"] = min(changes["min_insync_replicas"], len(config.replicas))
    return replace(config, **changes) if changes else config


__all__ = ["CONTROLLER_KINDS", "FEATURES", "LimitsError", "check", "config_reason", "fit", "run_reason"]
