"""Observations as changes on the stdio wire (protocol 4, ``observation_deltas``).

The delta of any two reference observations rebuilds the second exactly; a delta that does
not apply names its field; the SDK and the example adapter opt in only when offered; and a
stdio run with deltas judges every bundled fixture as one without them.
"""

from __future__ import annotations

import copy
import io
import itertools
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers import bundled_fixtures
from hypothesis import given
from hypothesis import strategies as st

from conformance import sdk
from conformance.adapters.base import AdapterError
from conformance.adapters.deltas import DeltaError, Grown, apply_delta, diff
from conformance.adapters.stdio import StdioAdapter
from conformance.fixtures.schemas import validator
from conformance.judging.runner import run_fixtures
from conformance.search.distribution import DataChooser, configs, draw_steps
from reference_impl import Generation, StepRejected, apply, initial_state, observe
from reference_impl.observe import AMENDED_FROM, Amended, Observer, agreed_prefix
from reference_impl.steps import Produce

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = [sys.executable, str(ROOT / "examples" / "stdio_reference_adapter.py")]


def _strict(value: object) -> object:
    """A value with its exact JSON types, so ``1`` never equals ``True`` nor a tuple a list
    (a list subclass, a rebuilt log that knows its base, is a list)."""
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return ("tuple" if isinstance(value, tuple) else "list", [_strict(v) for v in value])
    return (type(value).__name__, value)


def _observations(data: st.DataObject, max_steps: int, observer: Observer | None = None) -> list[dict[str, Any]]:
    """The observations of one random reference run (crashes, elections, truncations: fuzz's
    mix); with ``observer``, made by it (parts shared with the observation before)."""
    generation = data.draw(st.sampled_from(list(Generation)), label="generation")
    config = data.draw(configs(generation), label="config")
    chooser = DataChooser(data.draw)
    state = initial_state(config)
    seen = [observe(state, observer)]
    for _ in range(data.draw(st.integers(1, max_steps), label="length")):
        batch = draw_steps(chooser, state)
        if not batch:
            break
        for step in batch:
            try:
                state = apply(state, step)
            except StepRejected:
                continue
            seen.append(observe(state, observer))
    return seen


@given(data=st.data())
def test_the_delta_of_any_two_reference_observations_rebuilds_the_second(data: st.DataObject) -> None:
    seen = _observations(data, max_steps=40)
    old = data.draw(st.sampled_from(seen), label="old")
    new = data.draw(st.sampled_from(seen), label="new")
    frozen = copy.deepcopy(old)
    delta = diff(old, new)
    validator("adapter-messages", "observation_delta").validate(delta)
    rebuilt = apply_delta(old, json.loads(json.dumps(delta)))  # as it crosses the wire
    assert _strict(rebuilt) == _strict(new)
    assert old == frozen  # neither side mutates the previous observation
    assert (delta == {}) == (old == new)


@given(data=st.data())
def test_consecutive_deltas_replayed_rebuild_every_observation(data: st.DataObject) -> None:
    """What the harness does on a run: each rebuilt observation is the base of the next delta."""
    seen = _observations(data, max_steps=40)
    current = seen[0]
    for new in seen[1:]:
        current = apply_delta(current, diff(current, new))
        assert _strict(current) == _strict(new)


@given(data=st.data())
def test_shared_observations_give_the_deltas_fresh_ones_do(data: st.DataObject) -> None:
    """The example adapter diffs the ``Observer``'s observations, whose unchanged parts are
    the previous observation's objects (and a long run's producer map ``Amended``): ``diff``
    skips those by identity and reads only the changed keys, and must still send exactly
    the delta a diff of fresh copies sends."""
    seen = _observations(data, max_steps=60, observer=Observer())
    for old, new in itertools.pairwise(seen):
        fresh_old, fresh_new = json.loads(json.dumps(old)), json.loads(json.dumps(new))
        assert _strict(diff(old, new)) == _strict(diff(fresh_old, fresh_new))


def test_a_long_runs_producer_map_goes_as_its_changed_entries() -> None:
    """Past ``AMENDED_FROM`` produces the ``Observer``'s producer map is ``Amended``; its delta
    is still the changed entries only, as for a fresh map."""
    state = initial_state(bundled_fixtures()[0].config)
    observer = Observer()
    last = observe(state, observer)
    amended = 0
    for i in range(AMENDED_FROM + 9):
        state = apply(state, Produce(values=(f"v{i}",), acks="1", id=f"p{i}"))
        now = observe(state, observer)
        amended += type(now["producer"]) is Amended
        delta = diff(last, now)
        assert delta["merge"]["producer"] == {f"p{i}": now["producer"][f"p{i}"]}
        assert _strict(delta) == _strict(diff(json.loads(json.dumps(last)), json.loads(json.dumps(now))))
        last = now
    assert amended >= 8


def test_a_log_change_is_a_truncation_and_an_append() -> None:
    old = {"replicas": {"B": {"leo": 3, "log_start": 10, "log": ["a@0", "b@0", "c@0"]}}}
    new = {"replicas": {"B": {"leo": 3, "log_start": 10, "log": ["a@0", "x@1", "y@1"]}}}
    delta = diff(old, new)
    assert delta == {"replicas": {"B": {"log": {"truncate_to": 11, "append": ["x@1", "y@1"]}}}}
    assert apply_delta(old, delta) == new
    grown = {"replicas": {"B": {"leo": 4, "log_start": 10, "log": ["a@0", "b@0", "c@0", "d@0"]}}}
    assert diff(old, grown) == {"replicas": {"B": {"set": {"leo": 4}, "log": {"append": ["d@0"]}}}}


def test_outcomes_and_answers_go_as_changed_entries_only() -> None:
    old = {"producer": {"p1": "acked", "p2": "pending"}, "answers": {"fetch": {"A": None, "B": None}, "epoch": {}}}
    new = {
        "producer": {"p1": "acked", "p2": "acked", "p3": "pending"},
        "answers": {"fetch": {"A": None, "B": {"x": 1}}, "epoch": {}},
    }
    delta = diff(old, new)
    assert delta == {"merge": {"producer": {"p2": "acked", "p3": "pending"}, "answers": {"fetch": {"B": {"x": 1}}}}}
    assert apply_delta(old, delta) == new
    lost = {"producer": {"p2": "acked"}, "answers": old["answers"]}
    assert diff(old, lost) == {"set": {"producer": {"p2": "acked"}}}  # an entry removed: the field goes whole


@pytest.mark.parametrize(
    ("delta", "message"),
    [
        ({"replicas": {"B": {"log": {"truncate_to": 7}}}}, "replicas.B.log.truncate_to: 7 is above the log end 5"),
        ({"replicas": {"B": {"log": {"truncate_to": 1}}}}, "replicas.B.log.truncate_to: 1 is below the log start 2"),
        ({"replicas": {"D": {"set": {"leo": 1}}}}, "replicas.D: not a replica of the previous observation"),
        ({"unset": ["consumer"]}, "unset: 'consumer' is not in the previous observation"),
        ({"merge": {"isr": {"A": 1}}}, "merge.isr: only producer, in_flight, answers are merged"),
        ({"merge": {"producer": {"p1": "acked"}}}, "merge.producer: the previous observation has no producer object"),
        ({"replicas": {"B": {"set": {"leo": 1}, "unset": ["leo"]}}}, "replicas.B.leo: changed twice"),
        ({"set": {"replicas": {}}, "replicas": {"B": {}}}, "replicas: changed twice"),
        ({"replace": {}}, "observation_delta: unknown key 'replace'"),
        ({"replicas": {"B": {"log": {"append": "m@0"}}}}, "replicas.B.log.append: must be a list"),
    ],
)
def test_a_delta_that_does_not_apply_names_its_field(delta: dict[str, Any], message: str) -> None:
    old = {"leader": "A", "replicas": {"B": {"leo": 5, "log_start": 2, "log": ["a@0", "b@0", "c@0"]}}}
    with pytest.raises(DeltaError, match="^" + message.replace("(", r"\(").replace(".", r"\.")):
        apply_delta(old, delta)


class _Counter(sdk.Adapter):
    """The smallest SDK adapter: one replica whose log grows by one record a step."""

    name, steps, fields, replica_fields = "counter", ("produce",), ("replicas",), ("log",)

    def reset(self, config: dict[str, Any]) -> None:
        self.log: list[str] = []

    def step(self, step: dict[str, Any]) -> None:
        self.log.append(f"m{len(self.log)}@0")

    def observe(self) -> dict[str, Any]:
        return {"replicas": {"A": {"log": list(self.log)}}}


@pytest.mark.parametrize(
    ("hello", "opted"),
    [
        ({"cmd": "hello", "protocol": 4, "options": ["observation_deltas"]}, True),
        ({"cmd": "hello", "protocol": 4, "options": []}, False),
        ({"cmd": "hello", "protocol": 3}, False),  # an older kconform: whole observations
    ],
)
def test_the_sdk_sends_deltas_only_when_offered(hello: dict[str, Any], opted: bool) -> None:
    adapter = _Counter()
    reply = adapter.handle(hello)
    assert reply["protocol"] == hello["protocol"]
    assert (reply["implementation"]["capabilities"].get("observation_deltas") is True) is opted
    adapter.handle({"cmd": "reset", "config": {"replicas": ["A"]}})
    first = adapter.handle({"cmd": "step", "step": {"kind": "produce"}})
    second = adapter.handle({"cmd": "step", "step": {"kind": "produce"}})
    assert first["observation"] == {"replicas": {"A": {"log": ["m0@0"]}}}  # a run's first is whole
    if opted:
        assert second == {"ok": True, "observation_delta": {"replicas": {"A": {"log": {"append": ["m1@0"]}}}}}
    else:
        assert second["observation"] == {"replicas": {"A": {"log": ["m0@0", "m1@0"]}}}
    adapter.handle({"cmd": "reset", "config": {"replicas": ["A"]}})
    assert "observation" in adapter.handle({"cmd": "step", "step": {"kind": "produce"}})  # whole after reset


def test_the_example_adapter_speaks_deltas_that_fit_the_schema() -> None:
    sys.path.insert(0, str(ROOT / "examples"))
    from stdio_reference_adapter import Handler, serve

    fixture = next(f for f in bundled_fixtures() if f.id == "kip-320-fencing")
    requests: list[dict[str, Any]] = [
        {"cmd": "hello", "seq": 1, "protocol": 4, "options": ["observation_deltas"]},
        {"cmd": "reset", "seq": 2, "config": fixture.config.to_dict()},
    ]
    requests += [{"cmd": "step", "seq": i + 3, "step": fs.do} for i, fs in enumerate(fixture.steps)]
    out = io.StringIO()
    serve(Handler(), io.StringIO("".join(json.dumps(r) + "\n" for r in requests)), out)
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    for request in requests:
        validator("adapter-messages", "request").validate(request)
    for reply in replies:
        validator("adapter-messages", "response").validate(reply)
    assert replies[0]["protocol"] == 4 and replies[0]["implementation"]["capabilities"]["observation_deltas"]
    kinds = [("observation" in r, "observation_delta" in r) for r in replies[2:] if "rejected" not in r]
    assert kinds[0] == (True, False) and (False, True) in kinds[1:]


def _outcomes(adapter: StdioAdapter) -> dict[str, tuple[Any, ...]]:
    """Every fixture's verdict: outcome, reason, per-level verdicts, findings, steps run and checked."""
    try:
        _, results = run_fixtures(adapter, "stdio", bundled_fixtures())
    finally:
        adapter.close()
    return {r.fixture: (r.outcome, r.reason, r.levels, r.failures, r.steps_run, r.checked) for r in results}


def test_stdio_with_and_without_deltas_gives_the_same_verdicts_on_the_bundled_fixtures() -> None:
    with_deltas = StdioAdapter(EXAMPLE)
    with_deltas.describe()
    assert with_deltas.deltas
    without = StdioAdapter(EXAMPLE, deltas=False)
    without.describe()
    assert not without.deltas
    a, b = _outcomes(with_deltas), _outcomes(without)
    assert a == b
    assert Counter(verdict[0] for verdict in a.values())["passed"] >= 100


def _script(tmp_path: Path, body: str) -> list[str]:
    """An adapter: the example with ``body`` overriding its ``Handler`` methods."""
    script = tmp_path / "adapter.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT / 'examples')!r})\n"
        "from stdio_reference_adapter import Handler, serve\n"
        "class Changed(Handler):\n" + body + "serve(Changed())\n",
        encoding="utf-8",
    )
    return [sys.executable, str(script)]


def test_a_protocol_3_adapter_still_sends_whole_observations(tmp_path: Path) -> None:
    """An adapter from before the option ignores ``options`` and answers 3; it is judged as before."""
    command = _script(
        tmp_path,
        "    def cmd_hello(self, request):\n"
        "        reply = super().cmd_hello({'protocol': 3})\n"
        "        assert 'observation_deltas' not in reply['implementation']['capabilities']\n"
        "        return reply\n",
    )
    old = StdioAdapter(command)
    assert old.describe().name == "reference-stdio" and not old.deltas
    fixtures = [f for f in bundled_fixtures() if f.group == "kafka"][:20]
    try:
        _, results = run_fixtures(old, "old", fixtures)
    finally:
        old.close()
    assert {r.outcome for r in results} <= {"passed", "skipped"} and any(r.outcome == "passed" for r in results)


def test_a_delta_that_does_not_apply_errors_the_step_with_its_field(tmp_path: Path) -> None:
    command = _script(
        tmp_path,
        "    def cmd_step(self, request):\n"
        "        reply = super().cmd_step(request)\n"
        "        if 'observation_delta' in reply:\n"
        "            reply['observation_delta'] = {'replicas': {'A': {'log': {'truncate_to': 99}}}}\n"
        "        return reply\n",
    )
    adapter = StdioAdapter(command)
    try:
        adapter.reset({"replicas": ["A", "B"], "generation": "leader-epoch"})
        adapter.step({"kind": "produce", "values": ["m0"], "acks": "all", "id": "p1", "to": None})
        with pytest.raises(AdapterError, match=r"replicas\.A\.log\.truncate_to: 99 is above the log end 1"):
            adapter.step({"kind": "produce", "values": ["m1"], "acks": "all", "id": "p2", "to": None})
    finally:
        adapter.close()


def test_a_delta_the_harness_did_not_offer_is_refused(tmp_path: Path) -> None:
    command = _script(
        tmp_path,
        "    def cmd_hello(self, request):\n"
        "        return super().cmd_hello({**request, 'protocol': 4, 'options': ['observation_deltas']})\n",
    )
    adapter = StdioAdapter(command, deltas=False)
    with pytest.raises(AdapterError, match="declares observation_deltas, which kconform did not offer"):
        adapter.describe()
    adapter.close()


def test_a_rebuilt_log_knows_what_it_kept_one_step_back_only() -> None:
    """A log a delta changed is a ``Grown`` log: its first ``kept`` records are the previous
    log's (``agreed_prefix`` says so without reading either, and the shape check and the
    safety monitor then read only the rest); making the next one drops the older base, so
    a long run keeps two versions of a log, not all of them."""
    first = {"replicas": {"A": {"log_start": 0, "log": ["a@0", "b@0", "c@0"]}}}
    second = apply_delta(first, {"replicas": {"A": {"log": {"truncate_to": 2, "append": ["x@1"]}}}})
    log2 = second["replicas"]["A"]["log"]
    assert type(log2) is Grown and log2 == ["a@0", "b@0", "x@1"]
    assert log2.base is first["replicas"]["A"]["log"] and log2.kept == 2
    assert agreed_prefix(log2, first["replicas"]["A"]["log"]) == agreed_prefix(first["replicas"]["A"]["log"], log2) == 2
    third = apply_delta(second, {"replicas": {"A": {"log": {"append": ["y@1"]}}}})
    log3 = third["replicas"]["A"]["log"]
    assert log3.base is log2 and log3.kept == 3 and log2.base is None
    assert agreed_prefix(log3, first["replicas"]["A"]["log"]) == 0  # two steps back: not known
    assert apply_delta(third, {"set": {"clock_ms": 5}})["replicas"]["A"]["log"] is log3


def test_an_observers_log_knows_what_it_kept() -> None:
    """The reference's ``Observer`` says the same of the logs it renders: a log that grew
    by a produce kept every record of the one before."""
    from reference_impl import config_from_dict, step_from_dict

    observer = Observer()
    state = initial_state(config_from_dict({"replicas": ["A", "B"], "generation": "leader-epoch"}))
    state = apply(state, step_from_dict({"kind": "produce", "values": ["m0"]}))
    before = observe(state, observer)["replicas"]["A"]["log"]
    state = apply(state, step_from_dict({"kind": "produce", "values": ["m1"]}))
    after = observe(state, observer)["replicas"]["A"]["log"]
    assert after.base is before and after.kept == 1 == agreed_prefix(after, before)
