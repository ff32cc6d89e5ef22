"""Steps sent ahead of their answers (protocol 4's ``pipelining``, ``judging/ahead.py``).

Pipelining must change nothing but the cost: the implementation runs exactly the steps a
judge without it sends, and every verdict is the same. Checked three ways: the lookahead's
rule on any plan and any answers (hypothesis), whole runs of implementations that fail in
many ways over stdio with and without the option, and the stdio adapter's handling of a
run that ends with steps still in flight.
"""

from __future__ import annotations

import contextlib
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.adapters.base import Adapter, AdapterError, Description, StepResult
from conformance.adapters.stdio import StdioAdapter
from conformance.adapters.wire import wire_step
from conformance.fixtures.loading import load_fixtures
from conformance.fixtures.paths import FIXTURES_DIR
from conformance.judging.ahead import Lookahead, pipelines
from conformance.judging.coarsen import Plan, PlanStep
from conformance.judging.runner import reference_trace, run_fixtures
from conformance.sdk import Adapter as SdkAdapter
from reference_impl import step_from_dict

ROOT = Path(__file__).resolve().parents[1]
SERVE = [sys.executable, str(ROOT / "tests" / "fakes" / "serve_impl.py")]


class Recorder(Adapter):
    """Takes steps ahead (up to ``room`` in flight) and records what it was sent, in order."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.sent: list[dict[str, Any]] = []
        self.in_flight: list[dict[str, Any]] = []

    def describe(self) -> Description:
        raise NotImplementedError

    def reset(self, config: dict[str, Any], initial: dict[str, Any] | None = None) -> None:
        raise NotImplementedError

    def send_ahead(self, step: dict[str, Any]) -> bool:
        if len(self.in_flight) >= self.room:
            return False
        self.sent.append(step)
        self.in_flight.append(step)
        return True

    def step(self, step: dict[str, Any]) -> StepResult:
        if self.in_flight:
            assert self.in_flight.pop(0) is step, "answers are asked for in the order sent"
        else:
            self.sent.append(step)
        return StepResult(observation={})


KINDS = [
    {"kind": "produce", "values": ["m"]},
    {"kind": "produce", "values": ["m"], "id": "mine"},
    {"kind": "fetch", "replica": "B"},
    {"kind": "tick", "ms": 10},
]


@st.composite
def runs(draw: st.DrawFn) -> tuple[Plan, list[bool], int]:
    """A plan (steps, internal ones among them, the reference accepting or refusing each),
    the implementation's answer to each (accepted or not) and the room in flight."""
    n = draw(st.integers(1, 14))
    steps = []
    for _ in range(n):
        step = step_from_dict(draw(st.sampled_from(KINDS)))
        internal = draw(st.booleans()) and draw(st.booleans())
        rejected = None if draw(st.booleans()) or draw(st.booleans()) else "refused"
        steps.append(PlanStep(step, (), None, None, rejected=rejected, internal=internal))
    answers = [draw(st.booleans()) if draw(st.booleans()) else s.rejected is None for s in steps]
    return Plan(steps, 0), answers, draw(st.integers(0, 5))


@settings(max_examples=400, deadline=None)
@given(runs())
def test_every_step_sent_ahead_is_the_step_the_judge_sends_there(run: tuple[Plan, list[bool], int]) -> None:
    """Whatever the answers, the implementation receives exactly the steps a judge without
    pipelining would send (produce ids counted from the answers actually given), in order;
    steps it was sent ahead past the end of a run are only ever the run's own next steps."""
    plan, answers, room = run
    adapter = Recorder(room)
    ahead = Lookahead(adapter, plan)
    produced, unpiped = 0, []
    for n, ps in enumerate(plan.steps):
        if ps.internal:
            continue
        do = ahead.take(n, produced)
        expected = wire_step(ps.step, produced)
        unpiped.append(expected)
        assert do == expected
        answer = adapter.step(do)
        if not answers[n]:
            answer = StepResult(rejected="refused")
        ahead.answered(n)
        produced += answer.rejected is None and do["kind"] == "produce"
    assert adapter.sent == unpiped
    assert not adapter.in_flight


def test_a_produce_answered_otherwise_stops_sending_ahead() -> None:
    """The reference accepts the first produce, the implementation refuses it: the second
    produce (automatic id) is not sent ahead before that answer, and once it is read
    nothing more goes ahead."""
    produce = step_from_dict({"kind": "produce", "values": ["m"]})
    fetch = step_from_dict({"kind": "fetch", "replica": "B"})
    plan = Plan([PlanStep(s, (), None, None) for s in (produce, fetch, produce, fetch)], 0)
    adapter = Recorder(room=8)
    ahead = Lookahead(adapter, plan)
    assert ahead.take(0, 0)["id"] == "p1"
    assert [s["kind"] for s in adapter.sent] == ["produce", "fetch"]  # the second produce waits
    adapter.step(adapter.sent[0])  # the implementation refuses it: no produce accepted
    ahead.answered(0)
    assert ahead.take(1, 0) is adapter.sent[1]
    adapter.step(adapter.sent[1])
    ahead.answered(1)
    second = ahead.take(2, 0)
    assert second["id"] == "p1"  # numbered from the answers, and sent by ``step``, not ahead
    assert len(adapter.sent) == 2


def test_an_adapter_that_does_not_pipeline_is_asked_one_step_at_a_time() -> None:
    assert not pipelines(Recorder(3))
    assert not Adapter.send_ahead(Recorder(3), {"kind": "tick"})


# --- whole runs over stdio ------------------------------------------------------------

IMPLEMENTATIONS = [
    "reference",
    "zoo:acks-all-acked-on-append",  # produce outcomes differ: failures at many steps
    "zoo:unclean-election-when-disabled",  # a step performed that the reference refuses
    "choice-elect-last-eligible",  # another eligible leader: the settled level goes on
    "tests.fakes.shows_nothing:refuser",  # every step refused: every run stops at once
]


@pytest.fixture(scope="module")
def fixtures() -> list[Any]:
    loaded, problems = load_fixtures([FIXTURES_DIR])
    assert not problems
    return loaded


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_verdicts_are_the_same_with_and_without_pipelining(impl: str, fixtures: list[Any]) -> None:
    """Every bundled fixture, at ``settled`` (every level's verdict is in the record):
    the records over stdio with the option and without it are equal, field by field."""
    traces = {f.id: reference_trace(f) for f in fixtures}
    records = {}
    for piped in (True, False):
        adapter = StdioAdapter([*SERVE, impl, *([] if piped else ["--no-pipelining"])])
        try:
            _, results = run_fixtures(adapter, impl, fixtures, traces, level="settled")
            assert pipelines(adapter) is piped
        finally:
            adapter.close()
        records[piped] = [{k: v for k, v in r.to_dict().items() if k != "duration_ms"} for r in results]
    assert json.dumps(records[True], default=str) == json.dumps(records[False], default=str)


# --- the stdio adapter with steps in flight ----------------------------------------------

PROGRAM = textwrap.dedent(
    """
    import json, os, sys
    steps = 0
    for line in sys.stdin:
        r = json.loads(line)
        body = {}
        if r["cmd"] == "hello":
            caps = {"steps": ["tick"], "fields": ["clock_ms"], "replica_fields": []}
            if "pipelining" in r.get("options", ()):
                caps["pipelining"] = True
            body = {"protocol": 4, "implementation": {"name": "ticker", "generations": ["leader-epoch"],
                    "capabilities": caps}}
        elif r["cmd"] == "reset":
            steps = 0
        elif r["cmd"] == "step":
            steps += 1
            if steps == CRASH_AT:
                sys.exit(3)
            if steps == DEAF_AT:  # stops reading its input, answers this step, then exits
                os.close(0)
            body = {"observation": {"clock_ms": steps}}
        sys.stdout.write(json.dumps({"seq": r["seq"], "ok": True, **body}) + "\\n")
        sys.stdout.flush()
        if r["cmd"] == "step" and steps == DEAF_AT:
            print("ticker: stopped reading at step", steps, file=sys.stderr, flush=True)
            sys.exit(3)
    """
)

CONFIG = {"replicas": ["A", "B"], "generation": "leader-epoch"}


@contextlib.contextmanager
def ticker(crash_at: int = 0, deaf_at: int = 0) -> Iterator[StdioAdapter]:
    """A pipelining program of ticks, reset and ready (exits on step ``crash_at``; closes its
    input on step ``deaf_at``, answers it and exits; 0: never)."""
    program = PROGRAM.replace("CRASH_AT", str(crash_at)).replace("DEAF_AT", str(deaf_at))
    adapter = StdioAdapter([sys.executable, "-c", program], timeout_s=5)
    try:
        adapter.describe()
        adapter.reset(CONFIG)
        yield adapter
    finally:
        adapter.close()


def ticks(n: int) -> list[dict[str, Any]]:
    return [{"kind": "tick", "ms": 1} for _ in range(n)]


def test_steps_in_flight_are_answered_in_order_and_dropped_at_reset() -> None:
    with ticker() as adapter:
        tick = ticks(5)
        assert all(adapter.send_ahead(s) for s in tick)
        assert adapter.step(tick[0]).observation == {"clock_ms": 1}
        assert adapter.step(tick[1]).observation == {"clock_ms": 2}
        adapter.reset(CONFIG)  # the run ended early: three answers are read and dropped
        assert adapter.step(ticks(1)[0]).observation == {"clock_ms": 1}


def test_a_process_that_fails_on_a_step_no_run_needed_is_restarted_quietly() -> None:
    with ticker(crash_at=3) as adapter:
        tick = ticks(4)
        assert all(adapter.send_ahead(s) for s in tick)
        assert adapter.step(tick[0]).observation == {"clock_ms": 1}
        adapter.reset(CONFIG)  # the process exits on the third step, which no run judged
        assert adapter.step(ticks(1)[0]).observation == {"clock_ms": 1}


def test_a_process_that_stops_reading_fails_the_step_it_did_not_answer_not_the_sending() -> None:
    """A step sent ahead after the process closed its input is not written, and nothing is
    raised while sending (the judge sends ahead between two steps: an error there ended the
    whole command, seen as a flake under load); the answers it wrote still count, and the
    step it never answered fails with its exit code and stderr."""
    with ticker(deaf_at=1) as adapter:
        tick = ticks(3)
        assert adapter.send_ahead(tick[0])
        assert adapter.step(tick[0]).observation == {"clock_ms": 1}
        assert adapter._proc is not None
        adapter._proc.wait(timeout=10)  # it has exited: a write now finds no reader
        assert not adapter.send_ahead(tick[1])
        with pytest.raises(AdapterError, match="stopped reading its input before the step request") as caught:
            adapter.step(tick[1])
        assert "exited with code 3" in caught.value.message
        assert "stopped reading at step 1" in caught.value.detail
        adapter.reset(CONFIG)  # a fresh process takes steps ahead again
        assert adapter.send_ahead(tick[2]) and adapter.step(tick[2]).observation == {"clock_ms": 1}


def test_a_step_asked_for_out_of_order_is_a_kconform_bug_said_as_such() -> None:
    with ticker() as adapter:
        assert adapter.send_ahead(ticks(1)[0])
        with pytest.raises(AdapterError, match="a kconform bug"):
            adapter.step(ticks(1)[0])  # equal, but not the object sent ahead


def test_the_window_is_bounded() -> None:
    with ticker() as adapter:
        taken = [adapter.send_ahead(s) for s in ticks(40)]
        assert taken.count(True) == 32 and not any(taken[32:])


def test_pipelining_is_taken_only_when_offered() -> None:
    offered = StdioAdapter([*SERVE, "reference"])
    refused = StdioAdapter([*SERVE, "reference"], pipelining=False)
    try:
        offered.describe()
        assert offered.pipelining
        refused.describe()  # the program takes only what is offered
        assert not refused.pipelining and not refused.send_ahead({"kind": "tick", "ms": 1})
    finally:
        offered.close()
        refused.close()


def test_the_sdk_takes_pipelining_when_offered() -> None:
    class Tiny(SdkAdapter):
        steps = ("tick",)

    adapter = Tiny()
    reply = adapter.handle({"cmd": "hello", "protocol": 4, "options": ["pipelining"]})
    assert reply["implementation"]["capabilities"]["pipelining"] is True
    reply = adapter.handle({"cmd": "hello", "protocol": 4, "options": []})
    assert "pipelining" not in reply["implementation"]["capabilities"]
    adapter.pipelining = False
    reply = adapter.handle({"cmd": "hello", "protocol": 4, "options": ["pipelining"]})
    assert "pipelining" not in reply["implementation"]["capabilities"]


def test_declaring_pipelining_not_offered_fails_the_hello() -> None:
    """An adapter may take only what kconform offered: one that declares ``pipelining``
    anyway cannot start, and says why."""
    program = PROGRAM.replace('if "pipelining" in r.get("options", ()):', "if True:").replace("CRASH_AT", "0")
    adapter = StdioAdapter([sys.executable, "-c", program], pipelining=False)
    try:
        with pytest.raises(AdapterError, match="declares pipelining, which kconform did not offer"):
            adapter.describe()
    finally:
        adapter.close()
