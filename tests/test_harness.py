"""The harness: stdio and in-process agree; broken adapters are errored, never fatal;
every fixture lands in exactly one outcome; capabilities turn into skips."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
from helpers import bundled_fixtures

from conformance.adapters.base import Description
from conformance.adapters.in_process import FunctionAdapter, ReferenceAdapter, StepRefused
from conformance.adapters.stdio import StdioAdapter
from conformance.fixtures.loading import load_fixture_file
from conformance.implementations.registry import UnknownImplementation, resolve
from conformance.judging.runner import OUTCOMES, run_fixtures
from conformance.search.walk import walk
from reference_impl import StepRejected, apply, config_from_dict, initial_state, observe, step_from_dict

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = [sys.executable, str(ROOT / "examples" / "stdio_reference_adapter.py")]
BROKEN = [sys.executable, str(ROOT / "tests" / "fakes" / "broken_adapter.py")]
FIXTURES = bundled_fixtures()


def test_stdio_example_matches_in_process_step_by_step() -> None:
    stdio = StdioAdapter(EXAMPLE)
    reference = ReferenceAdapter()
    try:
        for fixture in FIXTURES:
            config = fixture.config.to_dict()
            stdio.reset(config, fixture.initial)
            reference.reset(config, fixture.initial)
            for fs in fixture.steps:
                assert stdio.step(fs.do) == reference.step(fs.do), (fixture.id, fs.index)
    finally:
        stdio.close()


def test_stdio_example_passes_every_fixture() -> None:
    adapter = StdioAdapter(EXAMPLE)
    description, results = run_fixtures(adapter, "stdio", FIXTURES)
    adapter.close()
    assert description is not None and description.name == "reference-stdio"
    assert Counter(r.outcome for r in results) == Counter({"passed": len(FIXTURES)})


@pytest.mark.parametrize(
    "mode, reason",
    [
        ("crash-on-third-step", "the process ended without replying (process exited with code 3)"),
        # stdout closes 0.5 s before the exit: the exit code must still be reported (the old race)
        ("close-then-exit", "the process ended without replying (process exited with code 3)"),
        ("hang", "no reply within 0.3 s"),
        ("garbage", "reply is not JSON"),
        ("wrong-seq", "reply has seq"),
        ("no-observation", "neither an 'observation' object nor 'rejected'"),
        ("refuse-config", "reset: reset failed: this implementation refuses every config"),
    ],
)
def test_broken_adapters_are_errored_and_the_run_goes_on(mode: str, reason: str) -> None:
    fixtures = [f for f in FIXTURES if len(f.steps) >= 3][:4]  # each reaches the third step
    # only the hanging adapter gets a short reply timeout: the others must answer their
    # normal steps however loaded the machine is (start-up has its own, long timeout)
    adapter = StdioAdapter([*BROKEN, mode], timeout_s=0.3 if mode == "hang" else 30.0)
    _, results = run_fixtures(adapter, mode, fixtures)
    adapter.close()
    assert len(results) == len(fixtures)  # every fixture lands in one outcome
    assert all(r.outcome == "errored" for r in results), [r.reason for r in results]
    assert all(reason in r.reason for r in results), results[0].reason
    assert "last request:" in results[0].detail
    if mode == "crash-on-third-step":
        assert results[0].reason.startswith("step 3 ")
        assert "crashing on purpose at step 3" in results[0].detail  # captured stderr, always whole
    if mode == "close-then-exit":
        assert "closing stdout, exiting later" in results[0].detail


def test_a_process_that_stops_reading_before_a_step_sent_ahead_errors_that_fixture_only() -> None:
    """Two produces with automatic ids: the second is sent ahead only once the first is
    answered, and by then the process has closed its input. The run is errored at step 2
    with the exit code and stderr; the command goes on (before, the failed write raised out
    of the judge and ended ``kconform fuzz`` with exit 2: a flake under load)."""
    config = config_from_dict({"replicas": ["A", "B"], "generation": "leader-epoch"})
    produce, fetch = {"kind": "produce", "values": ["a"]}, {"kind": "fetch", "replica": "B"}
    steps = [step_from_dict(d) for d in (produce, produce, fetch)]
    walked = walk(config, steps, "deaf", source="test")
    adapter = StdioAdapter([*BROKEN, "deaf-after-first-step"], timeout_s=30.0)
    try:
        _, results = run_fixtures(adapter, "deaf", [walked.fixture, walked.fixture])
    finally:
        adapter.close()
    assert [r.outcome for r in results] == ["errored", "errored"], [r.reason for r in results]
    assert all(r.reason.startswith("step 2 (produce)") and "exited with code 3" in r.reason for r in results)
    assert "stopped reading after step 1" in results[0].detail


def test_a_wrong_implementation_fails_with_its_first_divergence() -> None:
    adapter = StdioAdapter([*BROKEN, "wrong-hw"])
    _, results = run_fixtures(adapter, "wrong-hw", [f for f in FIXTURES if f.id == "seed-01-normal-round/leader-epoch"])
    adapter.close()
    [result] = results
    assert result.outcome == "failed"
    assert result.divergence is not None
    d = result.divergence
    # steps count from 1; the record names the step's kind and the rules the reference fired there
    assert (d["step"], d["kind"], d["field"]) == (1, "fetch", "replicas.A.hw")
    assert "FETCH-PARK-1" in d["rules"]
    assert result.reason.startswith("step 1 (fetch) at ")
    assert (result.divergence["expected"], result.divergence["actual"]) == (0, 1)
    # every difference at that step, then what the safety monitor found in the same observation
    assert {d["field"] for d in result.divergence["differences"]} == {
        "replicas.A.hw",
        "replicas.B.hw",
        "safety SAFE-HW-LE-LEO",
    }
    # keep going: later steps' divergences are recorded too, at each level
    assert len({f["step"] for f in result.failures}) > 1
    assert {f["level"] for f in result.failures} >= {"exact", "settled", "safety"}
    assert result.levels == {"exact": "failed", "settled": "failed", "safety": "failed"}


def test_an_observation_of_the_wrong_shape_errors_the_fixture_with_the_schema_problem() -> None:
    adapter = StdioAdapter([*BROKEN, "bad-observation"])
    _, results = run_fixtures(adapter, "bad-observation", FIXTURES[:3])
    adapter.close()
    assert [r.outcome for r in results] == ["errored"] * 3
    assert "does not fit the protocol schema" in results[0].reason
    # the first problem, with its path (observation_check reports one; the adapter sends two)
    assert 'isr: expected an array, got string "A' in results[0].reason, results[0].reason  # 'A,B' or 'A'


def test_steps_go_on_the_wire_complete_with_the_automatic_produce_id(tmp_path: Path) -> None:
    from conformance.adapters.wire import wire_step

    seen: list[dict[str, object]] = []
    reference = ReferenceAdapter()

    class Recording(FunctionAdapter):
        def step(self, step: dict[str, object]):  # type: ignore[no-untyped-def]
            seen.append(step)
            return reference.step(step)

    description = reference.describe()
    adapter = Recording(description, init=reference.reset, apply=lambda s, d: s, observe=lambda s: {})
    (tmp_path / "auto-ids.yaml").write_text(
        "id: auto-ids\ntitle: t\nsource: s\nconfig: {replicas: [A, B]}\nsteps:\n"
        "  - do: {kind: produce, values: [m0]}\n"
        "  - do: {kind: produce, values: [m1], acks: 1}\n"
        "    expect: {producer: {p1: pending, p2: acked}}\n",
        encoding="utf-8",
    )
    [fixture] = load_fixture_file(tmp_path / "auto-ids.yaml")
    _, [result] = run_fixtures(adapter, "recording", [fixture])
    assert result.outcome == "passed", result.reason
    produces = [s for s in seen if s["kind"] == "produce"]
    assert produces and all(set(p) == {"kind", "values", "acks", "id", "to"} for p in produces)
    assert [p["id"] for p in produces][:2] == ["p1", "p2"]
    assert wire_step(step_from_dict({"kind": "fetch", "replica": "B"}), 0) == {
        "kind": "fetch",
        "replica": "B",
        "max_records": None,
        "max_wait_ms": None,
    }


def test_describe_failure_errors_every_fixture() -> None:
    adapter = StdioAdapter([*BROKEN, "bad-hello"])
    description, results = run_fixtures(adapter, "x", FIXTURES[:3])
    assert description is None
    assert [r.outcome for r in results] == ["errored"] * 3
    assert "no valid 'implementation'" in results[0].reason


def test_missing_program_is_a_clear_error() -> None:
    adapter = StdioAdapter(["/nonexistent/kconform-adapter"])
    _, results = run_fixtures(adapter, "x", FIXTURES[:2])
    assert all(r.outcome == "errored" for r in results)
    assert "cannot run /nonexistent/kconform-adapter" in results[0].reason


def test_counts_add_up_and_skips_say_why() -> None:
    adapter = ReferenceAdapter("diverging-epoch")
    _, results = run_fixtures(adapter, "de", FIXTURES)
    counts = Counter(r.outcome for r in results)
    assert sum(counts.values()) == len(FIXTURES) and set(counts) <= set(OUTCOMES)
    skipped = [r for r in results if r.outcome == "skipped"]
    assert skipped and all(r.reason.startswith("generation ") for r in skipped)


def _tiny_adapter(steps: tuple[str, ...], replica_fields: tuple[str, ...]) -> FunctionAdapter:
    """A Python implementation through FunctionAdapter, backed by the reference."""

    def do(state, step):  # type: ignore[no-untyped-def]
        from reference_impl import StepRejected

        try:
            return apply(state, step_from_dict(step))
        except StepRejected as exc:
            raise StepRefused(exc.reason, exc.rule) from None

    return FunctionAdapter(
        Description("tiny", "1", ("leader-epoch",), steps, ("replicas",), replica_fields),
        init=lambda config: initial_state(config_from_dict(config)),
        apply=do,
        observe=observe,
    )


def test_function_adapter_capabilities_become_skips_and_partial_comparison() -> None:
    adapter = _tiny_adapter(("produce", "fetch", "fetch_round", "deliver_fetch", "tick", "consume"), ("leo",))
    _, results = run_fixtures(adapter, "tiny", FIXTURES)
    by_id = {r.fixture: r for r in results}
    assert by_id["seed-01-normal-round/leader-epoch"].outcome == "passed"  # only leo compared
    # no crash step: the fixture runs up to it, and says how much of it was checked
    lossy = by_id["seed-05a-data-loss-leader-epoch"]
    assert lossy.outcome == "passed" and lossy.stopped.startswith("step 7 (crash) is not supported")
    assert (lossy.checked, lossy.expectations) == (1, 8)
    assert by_id["seed-01-normal-round/hw-truncation"].reason.startswith("generation hw-truncation not supported")


def test_registry_resolves_all_three_forms() -> None:
    assert resolve("reference-leader-epoch").describe().generations == ("leader-epoch",)
    assert resolve("conformance.implementations.bundled:reference").describe().name == "reference"
    assert isinstance(resolve("exec:python3 x.py"), StdioAdapter)
    with pytest.raises(UnknownImplementation, match="use a registered name"):
        resolve("no-such-impl")
    with pytest.raises(UnknownImplementation, match="cannot import"):
        resolve("no_such_module:factory")
    with pytest.raises(UnknownImplementation, match="not a kconform Adapter"):
        resolve("conformance.fixtures.paths:Path")


def test_an_in_process_implementation_that_raises_is_errored_not_fatal() -> None:
    calls = {"n": 0}

    def flaky(state, step):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] % 2 == 0:
            raise KeyError("replica")
        return apply(state, step_from_dict(step))

    adapter = FunctionAdapter(
        Description(
            "flaky",
            "1",
            ("leader-epoch",),
            ("produce", "fetch_round", "fetch", "deliver_fetch", "tick"),
            ("replicas",),
            ("leo",),
        ),
        init=lambda config: initial_state(config_from_dict(config)),
        apply=flaky,
        observe=observe,
    )
    _, results = run_fixtures(adapter, "flaky", FIXTURES)
    errored = [r for r in results if r.outcome == "errored"]
    assert errored and len(results) == len(FIXTURES)
    assert "the implementation raised KeyError: 'replica'" in errored[0].reason
    assert "Traceback" in errored[0].detail


def test_example_adapter_messages_fit_the_protocol_schema() -> None:
    """Requests kconform sends and replies the example sends validate against
    spec/adapter-messages.schema.json."""
    import io
    import json

    from conformance.fixtures.schemas import validator

    sys.path.insert(0, str(ROOT / "examples"))
    from stdio_reference_adapter import Handler, serve

    fixture = next(f for f in FIXTURES if f.id == "kip-320-fencing")
    requests = [
        {"cmd": "hello", "seq": 1, "protocol": 1},
        {"cmd": "reset", "seq": 2, "config": fixture.config.to_dict()},
    ]
    requests += [{"cmd": "step", "seq": i + 3, "step": fs.do} for i, fs in enumerate(fixture.steps)]
    requests.append({"cmd": "close", "seq": len(requests) + 1})
    out = io.StringIO()
    serve(Handler(), io.StringIO("".join(json.dumps(r) + "\n" for r in requests)), out)
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    request_validator = validator("adapter-messages", "request")
    reply_validator = validator("adapter-messages", "response")
    for request in requests:
        request_validator.validate(request)
    for reply in replies:
        reply_validator.validate(reply)
    assert [r["seq"] for r in replies] == [r["seq"] for r in requests]


def _strict(value: object) -> object:
    """A value with its exact JSON types, so a tuple never equals a list."""
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return (type(value).__name__, [_strict(v) for v in value])
    return (type(value).__name__, value)


def test_the_reference_observation_is_exactly_what_json_carries() -> None:
    import json

    for fixture in FIXTURES:
        state = fixture.start()
        for fs in fixture.steps:
            try:
                state = apply(state, fs.step)
            except StepRejected:
                continue
            seen = observe(state)
            assert _strict(seen) == _strict(json.loads(json.dumps(seen))), (fixture.id, fs.number)
