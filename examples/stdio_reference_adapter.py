#!/usr/bin/env python3
"""The reference implementation behind kconform's stdio protocol (spec/adapter-protocol.md).

Run it with ``kconform run --impl 'exec:python3 examples/stdio_reference_adapter.py'``.
It is also the template for an adapter in another language: read a JSON line, dispatch
on ``cmd``, write one JSON line back with the same ``seq``, flush. It speaks protocol 3:
it can start from a given state (``reset`` with ``initial``) and performs every step
kind the reference has.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

import reference_impl
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


class Handler:
    def __init__(self) -> None:
        self.state: reference_impl.State | None = None

    def cmd_hello(self, request: dict[str, Any]) -> dict[str, Any]:
        return {
            "protocol": 3,
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
                },
            },
        }

    def cmd_reset(self, request: dict[str, Any]) -> dict[str, Any]:
        # Protocol 3: "initial" (sent only because the capabilities say initial_state) is
        # the state to start from, every default spelled out.
        self.state = initial_state(config_from_dict(request["config"]), request.get("initial"))
        return {}

    def cmd_step(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.state is None:
            raise ValueError("step before reset")
        try:
            self.state = reference_impl.apply(self.state, step_from_dict(request["step"]))
        except StepRejected as exc:
            return {"rejected": {"reason": exc.reason, "rule": exc.rule}}
        return {"observation": observe(self.state), "fired": list(self.state.fired)}

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
        stdout.write(json.dumps(reply, separators=(",", ":")) + "\n")
        stdout.flush()
        if request.get("cmd") == "close":
            return


if __name__ == "__main__":
    serve(Handler())
