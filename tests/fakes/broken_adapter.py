#!/usr/bin/env python3
"""Adapters that misbehave on purpose, to test the harness (as Bowtie's fauxmplementations).

Usage: broken_adapter.py MODE, with MODE one of:
  crash-on-third-step   exits with code 3 on the third step of every fixture
  hang                  never answers a step
  garbage               answers steps with a line that is not JSON
  wrong-seq             answers steps with the wrong seq
  no-observation        answers steps with ok but neither observation nor rejected
  refuse-config         answers reset with ok=false
  wrong-hw              reports every HW one higher than the reference (a wrong implementation)
  bad-hello             answers hello without an implementation
  close-then-exit       on the third step closes stdout, then exits with code 3 only 0.5 s
                        later (the race between end of output and exit, made deterministic)
  exit-at-start         writes a message to stderr and exits with code 2 before reading
  hang-at-hello         never answers hello
  bad-observation       reports isr as a string and replicas as a list (wrong shapes)
  deaf-after-first-step closes its input on the first step of every fixture, answers it,
                        then exits with code 3 (a step sent ahead later finds no reader)
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

from stdio_reference_adapter import Handler

MODE = sys.argv[1]


class Broken(Handler):
    steps_since_reset = 0

    def cmd_hello(self, request: dict[str, Any]) -> dict[str, Any]:
        reply = super().cmd_hello(request)
        reply["implementation"]["name"] = f"broken-{MODE}"
        if MODE == "bad-hello":
            del reply["implementation"]
        return reply

    def cmd_reset(self, request: dict[str, Any]) -> dict[str, Any]:
        if MODE == "refuse-config":
            raise ValueError("this implementation refuses every config")
        self.steps_since_reset = 0
        return super().cmd_reset(request)

    def cmd_step(self, request: dict[str, Any]) -> dict[str, Any]:
        self.steps_since_reset += 1
        if MODE == "crash-on-third-step" and self.steps_since_reset == 3:
            print("broken adapter: crashing on purpose at step 3", file=sys.stderr, flush=True)
            sys.exit(3)
        if MODE == "close-then-exit" and self.steps_since_reset == 3:
            print("broken adapter: closing stdout, exiting later", file=sys.stderr, flush=True)
            os.close(sys.stdout.fileno())
            time.sleep(0.5)
            os._exit(3)
        if MODE == "hang":
            time.sleep(3600)
        if MODE == "deaf-after-first-step" and self.steps_since_reset == 1:
            os.close(0)
        reply = super().cmd_step(request)
        if MODE == "wrong-hw" and "observation" in reply:
            for replica in reply["observation"]["replicas"].values():
                replica["hw"] += 1
        if MODE == "no-observation":
            return {}
        if MODE == "bad-observation" and "observation" in reply:
            observation = reply["observation"]
            observation["isr"] = ",".join(observation["isr"])
            observation["replicas"] = list(observation["replicas"].values())
        return reply


def main() -> None:
    if MODE == "exit-at-start":
        print("broken adapter: cannot open my data directory", file=sys.stderr, flush=True)
        sys.exit(2)
    handler = Broken()
    for line in sys.stdin:
        request = json.loads(line)
        seq = request.get("seq")
        if request["cmd"] == "hello" and MODE == "hang-at-hello":
            time.sleep(3600)
        if request["cmd"] == "step" and MODE == "garbage":
            sys.stdout.write("this is not json\n")
            sys.stdout.flush()
            continue
        if request["cmd"] == "step" and MODE == "wrong-seq":
            seq = (seq or 0) + 100
        try:
            body = getattr(handler, f"cmd_{request['cmd']}")(request)
            reply = {"seq": seq, "ok": True, **body}
        except ValueError as exc:
            reply = {"seq": seq, "ok": False, "error": str(exc)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
        if MODE == "deaf-after-first-step" and request["cmd"] == "step" and handler.steps_since_reset == 1:
            print("broken adapter: stopped reading after step 1", file=sys.stderr, flush=True)
            sys.exit(3)


if __name__ == "__main__":
    main()
