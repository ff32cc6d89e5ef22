#!/usr/bin/env python3
"""The reference implementation behind kconform's stdio protocol (spec/adapter-protocol.md).

Run it with ``kconform run --impl 'exec:python3 examples/stdio_reference_adapter.py'``.
It is also the template for an adapter in another language: read a JSON line, dispatch
on ``cmd``, write one JSON line back with the same ``seq``, flush. It speaks protocol 3:
it can start from a given state (``reset`` with ``initial``) and performs every step
kind the reference has. It speaks protocol 4 too: when kconform offers the
``observation_deltas`` option in ``hello``, it opts in and answers each step after the
first of a run with only what changed (``conformance.adapters.deltas.diff``; an adapter in another
language writes its own diff, or leaves the option out and sends whole observations).
It also opts into ``pipelining`` (kconform may send several steps before it reads the
replies): its loop reads one request line at a time and answers in order, so it needs
nothing more.

It observes with the reference's ``Observer``, which shares the parts of an observation that
did not change with the one before (the same objects); ``diff`` skips those without reading
them, so a step's reply costs what the step changed, not the size of the logs.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

import reference_impl
from conformance.adapters.deltas import diff
from reference_impl import (
    OBSERVATION_FIELDS,
    REPLICA_FIELDS,
    STEP_TYPES,
    Generation,
    KconformModelError,
    StepRejected,
    config_from_dict,
    initial_state,
    observe,
    step_from_dict,
)
from reference_impl.observe import Observer

ENCODE = json.JSONEncoder(separators=(",", ":")).encode  # one encoder, not one per reply


class Handler:
    def __init__(self) -> None:
        self.state: reference_impl.State | None = None
        self.deltas = False  # kconform offered observation_deltas (protocol 4) and we opted in
        self.previous: dict[str, Any] | None = None  # the run's last observation sent
        self.observer = Observer()  # shares unchanged parts between a run's observations

    def cmd_hello(self, request: dict[str, Any]) -> dict[str, Any]:
        asked = request.get("protocol")
        options = request.get("options") or ()
        self.deltas = asked == 4 and "observation_deltas" in options
        # pipelining: kconform may send several requests before reading the replies; the
        # loop in ``serve`` reads one line at a time and answers in order, which is all it takes
        pipelining = asked == 4 and "pipelining" in options
        return {
            "protocol": 4 if asked == 4 else 3,
            "implementation": {
                "name": "reference-stdio",
                "version": reference_impl.__version__,
                "language": "python",
                "generations": [g.value for g in Generation],
                "capabilities": {
                    "steps": list(STEP_TYPES),
                    "fields": list(OBSERVATION_FIELDS),
                    "replica_fields": list(REPLICA_FIELDS),
                    "initial_state": True,
                    **({"observation_deltas": True} if self.deltas else {}),
                    **({"pipelining": True} if pipelining else {}),
                },
            },
        }

    def cmd_reset(self, request: dict[str, Any]) -> dict[str, Any]:
        # Protocol 3: "initial" (sent only because the capabilities say initial_state) is
        # the state to start from, every default spelled out.
        self.state = initial_state(config_from_dict(request["config"]), request.get("initial"))
        self.previous = None  # the first observation of a run is always whole
        self.observer = Observer()
        return {}

    def cmd_step(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.state is None:
            raise ValueError("step before reset")
        try:
            self.state = reference_impl.apply(self.state, step_from_dict(request["step"]))
        except StepRejected as exc:
            return {"rejected": {"reason": exc.reason, "rule": exc.rule}}
        observation = observe(self.state, self.observer)
        previous, self.previous = self.previous, observation
        if self.deltas and previous is not None:
            return {"observation_delta": diff(previous, observation), "fired": list(self.state.fired)}
        return {"observation": observation, "fired": list(self.state.fired)}

    def cmd_close(self, request: dict[str, Any]) -> dict[str, Any]:
        return {}


def serve(handler: Handler, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> None:
    for line in stdin:
        request = json.loads(line)
        seq = request.get("seq")
        try:
            body = getattr(handler, f"cmd_{request['cmd']}")(request)
            reply = {"seq": seq, "ok": True, **body}
        except (KconformModelError, KeyError, ValueError) as exc:
            reply = {"seq": seq, "ok": False, "error": f"{type(exc).__name__}: {exc}"}
        stdout.write(ENCODE(reply) + "\n")
        stdout.flush()
        if request.get("cmd") == "close":
            return


if __name__ == "__main__":
    serve(Handler())
