"""What checking an observation's shape costs: the compiled check against jsonschema.

Usage (from the repository root):

    .venv/bin/python benchmarks/bench_observation_check.py --repeat 5

Replays every bundled fixture on the reference and keeps each observation (every one fits
the schema). Times ``observation_check.check_observation`` and jsonschema's validator for
the observation definition (``schemas.validator("definitions", "observation").is_valid``,
the cheapest jsonschema call: no error collection) over all of them, alternating, best of
``--repeat`` each; prints both per observation and their ratio.

Then the check by change (``check_shared_observation``, for observations nobody changes
once made) against the whole check, on the observations of one long produce + fetch run
made by the reference's ``Observer`` (``--long`` steps; its parts shared from step to
step), each over the whole run, alternating, best of ``--repeat``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from workloads import COMMON_CONFIG, long_trace

from conformance.fixtures.loading import load_fixtures
from conformance.fixtures.paths import FIXTURES_DIR
from conformance.fixtures.schemas import validator
from conformance.judging import observation_check
from conformance.judging.observation_check import check_observation, check_shared_observation
from reference_impl import StepRejected, apply, config_from_dict, initial_state, observe, step_from_dict
from reference_impl.observe import Observer


def observations(limit: int | None = None) -> list[dict[str, Any]]:
    fixtures, _ = load_fixtures([FIXTURES_DIR])
    fixtures = fixtures[:limit]
    out = []
    for fixture in fixtures:
        state = fixture.start()
        for fs in fixture.steps:
            try:
                state = apply(state, fs.step)
            except StepRejected:
                continue
            out.append(observe(state))
    return out


def long_run(steps: int) -> list[dict[str, Any]]:
    """The observations of a ``steps``-step produce + fetch run, made by one ``Observer``."""
    state = initial_state(config_from_dict(COMMON_CONFIG))
    observer = Observer()
    out = []
    for step in long_trace(steps):
        try:
            state = apply(state, step_from_dict(step))
        except StepRejected:
            continue
        out.append(observe(state, observer))
    return out


def best(check: Callable[[Any], Any], items: list[dict[str, Any]]) -> float:
    started = time.perf_counter()
    for item in items:
        check(item)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--long", type=int, default=4000, help="steps of the long run (default 4,000)")
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes, seconds (tests/test_benchmarks_smoke.py runs it)"
    )
    args = parser.parse_args()
    if args.smoke:
        args.repeat, args.long = 1, 50
    items = observations(10 if args.smoke else None)
    schema = validator("definitions", "observation")
    assert all(check_observation(o) is None and schema.is_valid(o) for o in items)
    compiled, full = [], []
    for _ in range(args.repeat):
        compiled.append(best(check_observation, items))
        full.append(best(schema.is_valid, items))
    per_compiled = min(compiled) / len(items) * 1e6
    per_full = min(full) / len(items) * 1e6
    print(f"{len(items)} observations of the bundled fixtures, best of {args.repeat}")
    print(f"compiled check_observation: {per_compiled:8.1f} µs per observation")
    print(f"jsonschema is_valid:        {per_full:8.1f} µs per observation")
    print(f"ratio: jsonschema / compiled = {per_full / per_compiled:.1f}")
    run = long_run(args.long)
    assert all(check_shared_observation(o) is None for o in run)
    whole, shared = [], []
    for _ in range(args.repeat):
        whole.append(best(check_observation, run))
        observation_check._observation_check.cache_clear()  # a fresh memory: nothing passed before
        shared.append(best(check_shared_observation, run))
    per_whole, per_shared = min(whole) / len(run) * 1e6, min(shared) / len(run) * 1e6
    end = max(len(r["log"]) for r in run[-1]["replicas"].values())
    print(f"\n{len(run)} observations of a {args.long}-step produce + fetch run (logs of {end} records at the end)")
    print(f"check_observation (whole):          {per_whole:8.1f} µs per observation")
    print(f"check_shared_observation (changes): {per_shared:8.1f} µs per observation")
    print(f"ratio: whole / by change = {per_whole / per_shared:.1f}")


if __name__ == "__main__":
    main()
