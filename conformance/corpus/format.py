"""The corpus line: one trace as one JSON object, and its conversion to a runnable ``Fixture``.

A corpus line carries what a fixture file carries (config, optionally the ``initial``
state to start from, steps, the observation expected after each step) plus provenance,
in a form that is cheap to store a million times over::

    {"corpus": 1, "id": "s1-42", "shape": "crash-mid-fetch",
     "config": {"replicas": ["A", "B", "C"], "generation": "leader-epoch", ...},
     "steps": [
       {"do": {"kind": "produce", "values": ["v1"]}, "expect": {...whole observation...},
        "rules": ["PRODUCE-1"]},
       {"do": {"kind": "fetch", "replica": "B"}, "changes": [[["replicas", "A", "leo"], 1]],
        "rules": ["FETCH-LEADER-1"]},
       {"do": {"kind": "restart", "replica": "B"}, "expect_rejected": "B is online"}
     ],
     "provenance": {"generator": "kconform generate", "version": "0.1.0", "seed": 1, "index": 42,
                    "recorded_from": "reference", "recorded_version": "0.1.0"}}

Each step states its expectation in one of three ways: ``expect`` (an observation, whole
or partial, as in a fixture file), ``changes`` (the edits that turn the previous step's
expected observation into this step's: ``[path, value]`` sets a field, ``[path]``
removes it; generated corpora use this, so a step costs tens of bytes instead of about a
kilobyte) or ``expect_rejected`` (the step must be refused). ``rules`` lists the spec
rules the reference fired at the step when the trace was made; replay recomputes them
when they are absent or were made by another reference version.

Every problem with a line is a ``CorpusLineError`` naming ``file:line: field``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import reference_impl
from reference_impl import ConfigError, InitialStateError, StepFormatError, config_from_dict, step_from_dict
from reference_impl.given import normalise
from reference_impl.observe import AMENDED_FROM, Amended

from ..fixtures.loading import Fixture, FixtureStep
from ..judging.coarsen import remember_start
from ..judging.runner import RuleTrace

FORMAT = 1
"""The corpus line format this kconform writes and reads (the ``corpus`` field)."""

_ID = re.compile(r"^[a-z0-9][a-z0-9.-]*$")

Path = list[str]
Change = list[Any]
"""``[path, value]`` (set the field at ``path``) or ``[path]`` (remove it)."""


@dataclass(frozen=True)
class CorpusLineError(Exception):
    """A corpus line that cannot be replayed, located to ``file:line`` and a field."""

    file: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.field}: {self.message}"


@dataclass(frozen=True)
class Trace:
    """One corpus trace, ready to run: the fixture, the reference's rules per step (or
    None when they must be recomputed), and where it came from."""

    fixture: Fixture
    rules: RuleTrace | None
    provenance: dict[str, Any]


# --- changes between observations -----------------------------------------------------


def diff_observations(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Change]:
    """The edits turning ``before`` into ``after``: mappings are compared key by key,
    everything else (lists, scalars) is replaced whole."""
    out: list[Change] = []
    _diff(before, after, [], out)
    return out


def _diff(before: Mapping[str, Any], after: Mapping[str, Any], path: Path, out: list[Change]) -> None:
    for key, value in after.items():
        if key not in before:
            out.append([[*path, key], value])
            continue
        old = before[key]
        if isinstance(value, dict) and isinstance(old, dict):
            _diff(old, value, [*path, key], out)
        elif old != value or type(old) is not type(value):
            out.append([[*path, key], value])
    for key in before:
        if key not in after:
            out.append([[*path, key]])


def apply_changes(observation: Mapping[str, Any], changes: Sequence[Any], field: str) -> dict[str, Any]:
    """A new observation with ``changes`` applied; the input is not modified (copy on
    write along each changed path: a mapping is copied the first time a change goes
    through it, and every part no change touches stays the previous observation's very
    object, which the judge compares by identity, ``compare.matches_since``; a mapping
    of more than ``AMENDED_FROM`` entries copied is ``Amended`` from the one before, naming
    the keys changed in it, so the judge reads only those). Raises ``ValueError`` naming
    the bad change."""
    root = dict(observation)
    fresh: dict[int, dict[str, Any]] = {id(root): root}
    """The mappings copied here (ours to change), by id; held so no id is reused."""
    amended: dict[int, list[str]] = {}
    """The changed keys of each ``Amended`` copy, by id."""
    for i, change in enumerate(changes):
        if type(change) is not list or len(change) not in (1, 2):
            raise ValueError(f"{field}[{i}]: a change is [path, value] or [path], got {change!r}")
        path = change[0]
        if type(path) is not list or not path:
            raise ValueError(f"{field}[{i}]: the path must be a non-empty list of field names, got {path!r}")
        node = root
        last = len(path) - 1
        for depth, key in enumerate(path):
            if type(key) is not str:
                raise ValueError(f"{field}[{i}]: the path must be a non-empty list of field names, got {path!r}")
            if depth == last:
                break
            child = node.get(key)
            if type(child) is not dict and type(child) is not Amended:
                raise ValueError(
                    f"{field}[{i}]: {'.'.join(path[: depth + 1])} is not a mapping in the previous observation"
                )
            if id(child) not in fresh:
                if len(child) > AMENDED_FROM:
                    keys: list[str] = []
                    child = Amended(child, keys)
                    amended[id(child)] = keys
                else:
                    child = dict(child)
                node[key] = child
                fresh[id(child)] = child
            if amended and id(node) in amended:
                amended[id(node)].append(key)  # its value is a new mapping
            node = child
        if amended and id(node) in amended:
            amended[id(node)].append(path[-1])
        if len(change) == 2:
            node[path[-1]] = change[1]
        elif path[-1] in node:
            del node[path[-1]]
        else:
            raise ValueError(f"{field}[{i}]: cannot remove {'.'.join(path)}: not in the previous observation")
    return root


# --- line -> trace --------------------------------------------------------------------


def parse_line(text: str | bytes, file: str, line: int) -> Trace:
    """Parse and check one corpus line; raise ``CorpusLineError`` for any problem."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            byte = f"byte 0x{exc.object[exc.start]:02x} at byte {exc.start + 1} of the line"
            raise CorpusLineError(file, line, "(line)", f"not UTF-8: {byte}") from None
    text = text.strip()
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:  # the position on this line (the file's line number is ``line``)
        cut = " (the line looks cut short)" if text.startswith("{") and not text.endswith("}") else ""
        raise CorpusLineError(file, line, "(json)", f"not JSON at column {exc.pos + 1}: {exc.msg}{cut}") from None
    return record_to_trace(record, file, line)


def record_to_trace(record: Any, file: str, line: int) -> Trace:
    """A decoded corpus line as a ``Trace``; raise ``CorpusLineError`` for any problem."""

    def bad(field: str, message: str) -> CorpusLineError:
        return CorpusLineError(file, line, field, message)

    if not isinstance(record, dict):
        raise bad("(line)", f"a corpus line is a JSON object, got {type(record).__name__}")
    version = record.get("corpus", FORMAT)
    if version != FORMAT:
        raise bad("corpus", f"corpus format {version!r}; this kconform reads {FORMAT}")
    trace_id = record.get("id")
    if not isinstance(trace_id, str) or not _ID.match(trace_id):
        raise bad("id", f"must be a lower-case id (letters, digits, '.', '-'), got {trace_id!r}")
    config_data = record.get("config")
    if not isinstance(config_data, dict):
        raise bad("config", "must be a mapping (the partition config)")
    try:
        config = config_from_dict(config_data)
    except ConfigError as exc:
        raise bad(f"config.{exc.field}", exc.message) from None
    initial: dict[str, Any] | None = None
    if record.get("initial") is not None:
        try:
            initial = normalise(config, record["initial"])
            remember_start(config, initial, reference_impl.initial_state(config, initial))
        except InitialStateError as exc:
            raise bad(f"initial.{exc.field}", exc.message) from None
    raw_steps = record.get("steps")
    if not isinstance(raw_steps, list) or not raw_steps:
        raise bad("steps", "must be a non-empty list")
    provenance = record.get("provenance") or {}
    if not isinstance(provenance, dict):
        raise bad("provenance", "must be a mapping")
    steps: list[FixtureStep] = []
    rules: RuleTrace = []
    has_rules = True
    current: dict[str, Any] | None = None
    for i, raw in enumerate(raw_steps):
        where = f"steps[{i}]"
        if not isinstance(raw, dict):
            raise bad(where, "a step is a mapping with 'do'")
        unknown = sorted(set(raw) - {"do", "expect", "changes", "expect_rejected", "rules", "why", "logs_match"})
        if unknown:
            raise bad(
                f"{where}.{unknown[0]}", "unknown field (do, expect, changes, expect_rejected, rules, why, logs_match)"
            )
        logs_match = raw.get("logs_match") or []
        if not isinstance(logs_match, list) or not all(isinstance(r, str) for r in logs_match):
            raise bad(f"{where}.logs_match", "must be a list of replica ids (whose logs must be equal)")
        do = raw.get("do")
        try:
            step = step_from_dict(do if do is not None else {})
        except StepFormatError as exc:
            raise bad(f"{where}.do.{exc.field}", exc.message) from None
        stated = [k for k in ("expect", "changes", "expect_rejected") if k in raw]
        if len(stated) > 1:
            raise bad(where, f"give one of expect, changes, expect_rejected (got {', '.join(stated)})")
        expect: dict[str, Any] | None = None
        rejected: str | None = None
        if "expect" in raw:
            if not isinstance(raw["expect"], dict):
                raise bad(f"{where}.expect", "must be a mapping (an observation)")
            expect = current = raw["expect"]
        elif "changes" in raw:
            if current is None:
                raise bad(f"{where}.changes", "changes need an earlier step with a whole 'expect'")
            if not isinstance(raw["changes"], list):
                raise bad(f"{where}.changes", "must be a list of [path, value] or [path]")
            try:
                expect = current = apply_changes(current, raw["changes"], f"{where}.changes")
            except ValueError as exc:
                field, _, message = str(exc).partition(": ")
                raise bad(field, message) from None
        elif "expect_rejected" in raw:
            rejected = raw["expect_rejected"]
            if not isinstance(rejected, str) or not rejected:
                raise bad(f"{where}.expect_rejected", "must be a non-empty string (why the step is refused)")
        step_rules = raw.get("rules")
        if step_rules is None:
            has_rules = False
        elif not isinstance(step_rules, list) or not all(isinstance(r, str) for r in step_rules):
            raise bad(f"{where}.rules", "must be a list of rule ids")
        else:
            rules.append(tuple(step_rules))
        steps.append(
            FixtureStep(
                index=i,
                step=step,
                do=dict(do or {}),
                expect=expect,
                expect_rejected=rejected,
                why=raw.get("why"),
                source=None,
                line=line,
                logs_match=tuple(logs_match),
            )
        )
    shape = record.get("shape") or "corpus"
    if not isinstance(shape, str):
        raise bad("shape", f"must be a string, got {shape!r}")
    fixture = Fixture(
        id=trace_id,
        base_id=trace_id,
        title=record.get("title") or f"trace {trace_id} ({shape})",
        source=record.get("source") or _source(provenance),
        description="",
        tags=(shape,),
        rules=(),
        generation=config.generation,
        config=config,
        steps=tuple(steps),
        path=file,
        line=line,
        group=shape,
        initial=initial,
    )
    fresh = has_rules and provenance.get("version", reference_impl.__version__) == reference_impl.__version__
    return Trace(fixture, rules if fresh else None, provenance)


def _source(provenance: Mapping[str, Any]) -> str:
    if "seed" in provenance:
        made = f"kconform generate --seed {provenance['seed']}, trace {provenance.get('index', '?')}"
        recorded = provenance.get("recorded_from")
        return made + (f", recorded from {recorded}" if recorded and recorded != "reference" else "")
    return "corpus"


def dumps(record: Mapping[str, Any]) -> str:
    """One corpus line (no newline): compact JSON."""
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False)
