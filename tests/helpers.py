"""Shared test helpers: the bundled fixtures loaded once, and a step-by-step driver."""

from __future__ import annotations

from typing import Any

from conformance.adapters.base import Description
from conformance.fixtures.loading import Fixture, Problem, load_fixtures
from conformance.fixtures.paths import FIXTURES_DIR
from reference_impl import Config, State, apply, initial_state, step_from_dict

LOGS_ONLY = Description(
    name="logs-only",
    version="1",
    generations=("hw-truncation", "leader-epoch", "diverging-epoch"),
    steps=("produce", "fetch_round", "tick"),
    fields=("clock_ms", "replicas"),
    replica_fields=("leo", "log"),
    step_fields={"produce": ("values", "acks", "id"), "fetch_round": ("replica", "max_records")},
)
"""The shape of examples/node/toy-broker-adapter.js: whole fetch rounds, logs and LEOs only
(``kconform sensitivity --like``, ``zoo/shaped.py``)."""

TINY_FIXTURE = """\
id: tiny
title: A tiny fixture
source: test
config:
  replicas: [A, B]
steps:
  - do: {kind: produce, values: [m0]}
    expect:
      replicas: {A: {leo: 1}}
"""
"""The smallest valid fixture file: one produce, one expectation."""

_LOADED: tuple[list[Fixture], list[Problem]] | None = None


def bundled() -> tuple[list[Fixture], list[Problem]]:
    global _LOADED
    if _LOADED is None:
        _LOADED = load_fixtures([FIXTURES_DIR])
    return _LOADED


def bundled_fixtures() -> list[Fixture]:
    return bundled()[0]


def run_steps(config: Config, *steps: dict[str, Any]) -> State:
    """Apply plain-data steps (as in fixtures) from the initial state."""
    state = initial_state(config)
    for step in steps:
        state = apply(state, step_from_dict(step))
    return state
