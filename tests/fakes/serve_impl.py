"""Serve any implementation kconform can name (``reference``, ``zoo:NAME``, a bundled
choice, ``module:factory``) over the stdio protocol, so a test can judge the same
implementation in process and over the wire (tests/test_pipelining.py).

    python tests/fakes/serve_impl.py zoo:leader-hw-on-every-fetch [--no-pipelining] [--no-deltas]

It speaks protocol 4 and takes both options unless told not to: steps are answered in
order, one line at a time, whatever kconform sent ahead.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from typing import Any

from conformance.adapters.base import AdapterError
from conformance.adapters.deltas import diff
from conformance.implementations.registry import resolve


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, (tuple, list)) else str(value)


ENCODE = json.JSONEncoder(separators=(",", ":"), default=_plain).encode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("impl")
    parser.add_argument("--no-pipelining", action="store_true")
    parser.add_argument("--no-deltas", action="store_true")
    args = parser.parse_args()
    adapter = resolve(args.impl)
    deltas = False
    previous: dict[str, Any] | None = None
    for line in sys.stdin:
        request = json.loads(line)
        seq, cmd = request.get("seq"), request.get("cmd")
        body: dict[str, Any]
        try:
            if cmd == "hello":
                options = request.get("options") or ()
                deltas = not args.no_deltas and "observation_deltas" in options
                piped = not args.no_pipelining and "pipelining" in options
                implementation = adapter.describe().to_dict()
                caps = implementation["capabilities"]
                caps.update({"observation_deltas": True} if deltas else {})
                caps.update({"pipelining": True} if piped else {})
                body = {"protocol": 4, "implementation": implementation}
            elif cmd == "reset":
                adapter.reset(request["config"], request.get("initial"))
                previous, body = None, {}
            elif cmd == "step":
                result = adapter.step(request["step"])
                if result.rejected is not None:
                    body = {"rejected": {"reason": result.rejected, **({"rule": result.rule} if result.rule else {})}}
                else:
                    observation = json.loads(ENCODE(result.observation))  # plain data, a copy
                    if deltas and previous is not None:
                        body = {"observation_delta": diff(previous, observation)}
                    else:
                        body = {"observation": observation}
                    previous = observation
            elif cmd == "close":
                body = {}
            else:
                raise ValueError(f"unknown command {cmd!r}")
            reply = {"seq": seq, "ok": True, **body}
        except AdapterError as exc:
            reply = {"seq": seq, "ok": False, "error": exc.message}
        except Exception as exc:  # the implementation's fault: report it, keep serving
            traceback.print_exc(file=sys.stderr)
            reply = {"seq": seq, "ok": False, "error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(ENCODE(reply) + "\n")
        sys.stdout.flush()
        if cmd == "close":
            return


if __name__ == "__main__":
    main()
