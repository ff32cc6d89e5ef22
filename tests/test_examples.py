"""The adapter examples: the SDK's toy-broker adapter and a non-Python (Node.js) adapter pass
the suite at ``exact`` on everything they claim, through the real stdio protocol."""

from __future__ import annotations

import io
import json
import shutil
import sys
from collections import Counter
from pathlib import Path

import pytest

from conformance import sdk
from conformance.adapters.stdio import StdioAdapter
from conformance.fixtures.loading import load_fixtures
from conformance.fixtures.paths import FIXTURES_DIR
from conformance.judging.runner import run_fixtures

ROOT = Path(__file__).resolve().parents[1]
FIXTURES, _ = load_fixtures([FIXTURES_DIR])
TOY = ROOT / "examples" / "toy_broker_adapter.py"
NODE = ROOT / "examples" / "node" / "toy-broker-adapter.js"


def _judge(argv: list[str]) -> Counter[str]:
    adapter = StdioAdapter(argv, timeout_s=30)
    _, results = run_fixtures(adapter, "example", FIXTURES)
    adapter.close()
    assert [(r.fixture, r.reason) for r in results if r.outcome in ("failed", "errored")] == []
    assert all(r.levels.get("exact") == "passed" for r in results if r.outcome == "passed")
    return Counter(r.outcome for r in results)


def test_the_sdk_toy_broker_adapter_is_short_and_passes_at_exact() -> None:
    assert len(TOY.read_text(encoding="utf-8").splitlines()) < 80
    outcomes = _judge([sys.executable, str(TOY)])
    assert outcomes["passed"] >= 10


def test_a_javascript_adapter_passes_at_exact() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed: the JavaScript example adapter cannot run")
    outcomes = _judge([node, str(NODE)])
    assert outcomes["passed"] >= 20


def test_the_javascript_adapter_agrees_with_the_reference_on_random_runs_at_settled(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Fuzz finds no disagreement at ``settled`` (it answers a woken fetch at once, a
    timing ``exact`` sees). Before its ISR, it appended acks=all produces the reference
    refuses below min.insync.replicas, which fuzz found in its first runs and which the
    fixture ``produce-acks-all-refused-after-isr-shrinks-by-lag`` now shows too."""
    from conformance.cli.main import main

    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed: the JavaScript example adapter cannot run")
    for generation in ("hw-truncation", "leader-epoch", "diverging-epoch"):
        main(["fuzz", "--impl", f"exec:{node} {NODE}", "--generation", generation, "--examples", "40",
              "--seed", "7", "--level", "settled", "--json", "--no-progress"])  # fmt: skip
        found = json.loads(capsys.readouterr().out)
        assert found["runs"] == 40 and found["failures"] == [], (generation, found["failures"])


class _Refusing(sdk.Adapter):
    name, steps, fields = "refusing", ("tick",), ("clock_ms",)
    refusals = (KeyError,)

    def reset(self, config: dict[str, object]) -> None:
        self.now = 0

    def step(self, step: dict[str, object]) -> None:
        if step["ms"] == 0:
            raise KeyError("zero")
        if step["ms"] == 1:
            raise sdk.Refused("one is not allowed", "TICK-1")
        if step["ms"] == 2:
            raise RuntimeError("broken")
        self.now += int(step["ms"])  # type: ignore[call-overload]

    def observe(self) -> dict[str, object]:
        return {"clock_ms": self.now}


def test_the_sdk_speaks_the_protocol() -> None:
    requests = [
        {"cmd": "hello", "seq": 1, "protocol": 2},
        {"cmd": "reset", "seq": 2, "config": {}},
        {"cmd": "step", "seq": 3, "step": {"kind": "tick", "ms": 5}},
        {"cmd": "step", "seq": 4, "step": {"kind": "tick", "ms": 0}},
        {"cmd": "step", "seq": 5, "step": {"kind": "tick", "ms": 1}},
        {"cmd": "step", "seq": 6, "step": {"kind": "tick", "ms": 2}},
        {"cmd": "close", "seq": 7},
    ]
    out = io.StringIO()
    sdk.serve(_Refusing(), io.StringIO("".join(json.dumps(r) + "\n" for r in requests)), out)
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["seq"] for r in replies] == list(range(1, 8))
    assert replies[0]["protocol"] == 2 and replies[0]["implementation"]["capabilities"]["steps"] == ["tick"]
    assert replies[2]["observation"] == {"clock_ms": 5}
    assert replies[3]["rejected"] == {"reason": "'zero'"}
    assert replies[4]["rejected"] == {"reason": "one is not allowed", "rule": "TICK-1"}
    assert replies[5]["ok"] is False and "RuntimeError: broken" in replies[5]["error"]
