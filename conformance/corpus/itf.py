"""kconform traces as ITF files, and ITF files as kconform traces.

ITF, the Informal Trace Format (Apalache ADR-015,
https://apalache-mc.org/docs/adr/015adr-trace.html), is the JSON trace format that
Apalache and Quint read and write: a trace object with ``vars`` and ``states``, each
state a JSON object giving every variable an *expression* (string, boolean, integer,
``{"#bigint": "N"}``, list, record, ``{"#tup": [...]}``, ``{"#set": [...]}``,
``{"#map": [[k, v], ...]}``; Quint adds variants ``{"tag": T, "value": V}``).

The mapping (docs/itf.md): a trace of N steps is N + 1 states. The parameter
``config`` (and ``initial`` when the trace starts from a given state) is set in state 0.
Every state sets three variables:

- ``action``: the step taken to reach this state, a record as a fixture's ``do`` (state
  0: ``{"kind": "init"}``);
- ``observation``: the observation kconform expects after the step, whole or partial as
  the fixture states it; ``None`` (Quint's ``{"tag": "None", ...}``) where nothing is
  checked; state 0 holds the reference's initial observation, for reading only;
- ``rejected``: ``""``, or why the step must be refused (then ``observation`` repeats the
  state before).

Integers are written ``{"#bigint": "N"}`` (what Apalache and Quint write); JSON ``null``,
which ITF lacks, is Quint's ``None`` variant. Importing also accepts plain JSON integers,
tuples and sets (as lists), string-keyed maps (as records), ``Some(x)`` (as ``x``), and
Quint's model-based testing variables ``mbt::actionTaken`` / ``mbt::nondetPicks`` in place
of ``action``. Other variables of a model (its own state) are ignored.

Every problem is an ``ItfError`` naming the file and the place in it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import reference_impl
from reference_impl import initial_state, observe, step_to_dict

from ..fixtures.loading import Fixture

FORMAT_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"
MAPPING = 1
"""The version of kconform's mapping to ITF variables (``#meta.kconform.mapping``)."""
VARS = ("action", "observation", "rejected")
SUFFIX = ".itf.json"
NONE: dict[str, Any] = {"tag": "None", "value": {"#tup": []}}
"""JSON ``null`` as Quint writes ``None`` (its unit value, the empty tuple); ``{"tag": "None",
"value": {}}``, as older Quint wrote it, is read too."""
_BIGINT = re.compile(r"^-?[0-9]+$")
_TOP = {"#meta", "params", "vars", "states", "loop"}


class ItfError(Exception):
    """An ITF file or value kconform cannot use: ``file: where: what``."""

    def __init__(self, file: str, where: str, message: str) -> None:
        super().__init__(f"{file}: {where}: {message}" if where else f"{file}: {message}")
        self.file, self.where, self.message = file, where, message


# --- values -----------------------------------------------------------------------------


def encode(value: Any, where: str = "") -> Any:
    """A JSON value (as kconform's observations and steps are) as an ITF expression."""
    if value is None:
        return dict(NONE)
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return {"#bigint": str(value)}
    if isinstance(value, list | tuple):
        return [encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for key, v in value.items():
            if not isinstance(key, str) or key.startswith("#"):
                raise ValueError(f"{where}: the field name {key} cannot be an ITF record field")
            out[key] = encode(v, f"{where}.{key}" if where else key)
        return out
    raise ValueError(f"{where}: {type(value).__name__} values have no ITF form (numbers are integers)")


def decode(expr: Any, where: str = "") -> Any:
    """An ITF expression as a JSON value; raises ``ValueError`` naming the place."""
    if isinstance(expr, bool | str):
        return expr
    if isinstance(expr, int):
        return expr
    if isinstance(expr, float):
        raise ValueError(f"{where}: {expr} is not an integer (ITF has no fractions)")
    if isinstance(expr, list):
        return [decode(v, f"{where}[{i}]") for i, v in enumerate(expr)]
    if not isinstance(expr, dict):
        raise ValueError(f"{where}: not an ITF expression: {json.dumps(expr)}")
    if "#bigint" in expr:
        digits = expr["#bigint"]
        if len(expr) != 1 or not isinstance(digits, str) or not _BIGINT.match(digits):
            raise ValueError(f'{where}: a big integer is {{"#bigint": "[-][0-9]+"}}')
        return int(digits)
    for tag in ("#tup", "#set"):
        if tag in expr:
            if len(expr) != 1 or not isinstance(expr[tag], list):
                raise ValueError(f"{where}: {tag} holds one list")
            return [decode(v, f"{where}[{i}]") for i, v in enumerate(expr[tag])]
    if "#map" in expr:
        pairs = expr["#map"]
        if len(expr) != 1 or not isinstance(pairs, list):
            raise ValueError(f"{where}: #map holds one list of [key, value] pairs")
        out: dict[str, Any] = {}
        for i, pair in enumerate(pairs):
            if not isinstance(pair, list) or len(pair) != 2:
                raise ValueError(f"{where}.#map[{i}]: a pair is [key, value]")
            key = decode(pair[0], f"{where}.#map[{i}][0]")
            if not isinstance(key, str):
                raise ValueError(f"{where}.#map[{i}]: kconform's maps have string keys, got {json.dumps(key)}")
            out[key] = decode(pair[1], f"{where}.{key}")
        return out
    if "#unserializable" in expr:
        raise ValueError(f"{where}: the tool could not write this value ({expr['#unserializable']})")
    if set(expr) == {"tag", "value"} and expr["tag"] in ("None", "Some"):
        return None if expr["tag"] == "None" else decode(expr["value"], where)
    bad = [k for k in expr if k.startswith("#")]
    if bad:
        raise ValueError(f"{where}: unknown ITF form {bad[0]}")
    return {k: decode(v, f"{where}.{k}" if where else k) for k, v in expr.items()}


def problems(data: Any) -> list[str]:
    """Where ``data`` departs from ADR-015's trace object (empty: a valid ITF trace)."""
    if not isinstance(data, dict):
        return ["(trace): an ITF trace is a JSON object"]
    out = [f"{k}: not a field of an ITF trace ({', '.join(sorted(_TOP))})" for k in data if k not in _TOP]
    for name in ("vars", "params"):
        given = data.get(name, [] if name == "params" else None)
        if not isinstance(given, list) or not all(isinstance(v, str) for v in given):
            out.append(f"{name}: must be a list of variable names")
    states = data.get("states")
    if not isinstance(states, list):
        return [*out, "states: must be a list of states"]
    if "#meta" in data and not isinstance(data["#meta"], dict):
        out.append("#meta: must be an object")
    loop = data.get("loop")
    if loop is not None and (not isinstance(loop, int) or isinstance(loop, bool) or not 0 <= loop < len(states)):
        out.append("loop: must be the index of a state")
    names: list[Any] = data["vars"] if isinstance(data.get("vars"), list) else []
    params: list[Any] = data["params"] if isinstance(data.get("params"), list) else []
    for i, state in enumerate(states):
        if not isinstance(state, dict):
            out.append(f"states[{i}]: a state is a JSON object")
            continue
        needed = list(names) + (list(params) if i == 0 else [])
        out += [f"states[{i}]: no value for the variable {v}" for v in needed if v not in state]
        for key, value in state.items():
            if key == "#meta":
                if not isinstance(value, dict):
                    out.append(f"states[{i}].#meta: must be an object")
                continue
            out += _expression_problems(value, f"states[{i}].{key}")
    return out


def _expression_problems(expr: Any, where: str) -> list[str]:
    if isinstance(expr, bool | str):
        return []
    if isinstance(expr, int):
        return [] if -(2**53) < expr < 2**53 else [f'{where}: integers beyond 2^53 are written {{"#bigint": "N"}}']
    if isinstance(expr, list):
        return [p for i, v in enumerate(expr) for p in _expression_problems(v, f"{where}[{i}]")]
    if not isinstance(expr, dict):
        return [f"{where}: {json.dumps(expr)} is not an ITF expression"]
    if "#bigint" in expr:
        ok = len(expr) == 1 and isinstance(expr["#bigint"], str) and _BIGINT.match(expr["#bigint"])
        return [] if ok else [f'{where}: a big integer is {{"#bigint": "[-][0-9]+"}}']
    for tag in ("#tup", "#set"):
        if tag in expr:
            if len(expr) != 1 or not isinstance(expr[tag], list):
                return [f"{where}: {tag} holds one list"]
            return _expression_problems(expr[tag], f"{where}.{tag}")
    if "#map" in expr:
        pairs = expr["#map"]
        if len(expr) != 1 or not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
            return [f"{where}: #map holds one list of [key, value] pairs"]
        return _expression_problems(pairs, f"{where}.#map")
    if "#unserializable" in expr:
        return [] if len(expr) == 1 and isinstance(expr["#unserializable"], str) else [f"{where}: bad #unserializable"]
    bad = [k for k in expr if k.startswith("#")]
    if bad:
        return [f"{where}: record field names do not start with # ({bad[0]})"]
    return [p for k, v in expr.items() for p in _expression_problems(v, f"{where}.{k}")]


# --- kconform trace -> ITF --------------------------------------------------------------


def fixture_to_itf(fixture: Fixture, source: str | None = None) -> dict[str, Any]:
    """One fixture case (a fixture file's case, a witness, a corpus trace) as an ITF trace."""
    config = fixture.config.to_dict()
    start = observe(initial_state(fixture.config, fixture.initial))
    params = {"config": encode(config, "config")}
    if fixture.initial is not None:
        params["initial"] = encode(fixture.initial, "initial")
    states: list[dict[str, Any]] = [
        {
            "#meta": {"index": 0},
            **params,
            "action": {"kind": "init"},
            "observation": encode(start, "observation"),
            "rejected": "",
        }
    ]
    before: Any = start
    for fs in fixture.steps:
        meta: dict[str, Any] = {"index": fs.index + 1, "step": fs.number}
        if fs.line:
            meta["line"] = fs.line
        if fs.why:
            meta["why"] = fs.why.strip()
        if fs.logs_match:
            meta["logs_match"] = list(fs.logs_match)
        if fs.expect_rejected is not None:
            observation, rejected = before, fs.expect_rejected
        else:
            observation, rejected = fs.expect, ""
            before = fs.expect if fs.expect is not None else before
        where = f"steps[{fs.index}]"
        states.append(
            {
                "#meta": meta,
                "action": encode(step_to_dict(fs.step), f"{where}.do"),
                "observation": encode(observation, f"{where}.expect"),
                "rejected": rejected,
            }
        )
    return {
        "#meta": {
            "format": "ITF",
            "format-description": FORMAT_DESCRIPTION,
            "source": source or fixture.path,
            "description": f"kconform trace {fixture.id}: {fixture.title}",
            "kconform": {
                "mapping": MAPPING,
                "id": fixture.id,
                "title": fixture.title,
                "generation": fixture.generation.value,
                "tags": list(fixture.tags),
                "version": reference_impl.__version__,
            },
        },
        "params": list(params),
        "vars": list(VARS),
        "states": states,
    }


def file_name(fixture_id: str) -> str:
    """The ITF file name of a trace id (``/`` and other separators become ``.``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", ".", fixture_id).strip(".") + SUFFIX


def dumps(trace: Mapping[str, Any]) -> str:
    return json.dumps(trace, indent=1, ensure_ascii=False) + "\n"


# --- ITF -> corpus line -----------------------------------------------------------------


def itf_to_record(data: Any, file: str) -> dict[str, Any]:
    """An ITF trace as a corpus line (``conformance/corpus/format.py``); raise ``ItfError``."""
    found = problems(data)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        where, _, message = found[0].partition(": ")
        raise ItfError(file, where, message + more)
    states = data["states"]
    if len(states) < 2:
        raise ItfError(file, "states", "a trace to replay needs the initial state and at least one step")
    first = states[0]
    if "config" not in first:
        raise ItfError(file, "states[0]", "no config (the partition config, a parameter set in the first state)")
    try:
        config = decode(first["config"], "config")
        initial = decode(first["initial"], "initial") if "initial" in first else None
    except ValueError as exc:
        raise ItfError(file, "states[0]", str(exc)) from None
    steps = []
    for i, state in enumerate(states[1:], start=1):
        where = f"states[{i}]"
        try:
            steps.append(_step(state, where))
        except ValueError as exc:
            raise ItfError(file, where, str(exc)) from None
    meta: dict[str, Any] = data.get("#meta") or {}
    ours: dict[str, Any] = meta["kconform"] if isinstance(meta.get("kconform"), dict) else {}
    given = ours.get("id") or Path(file).name.removesuffix(SUFFIX).removesuffix(".json")
    trace_id = re.sub(r"[^a-z0-9.-]+", ".", str(given).lower()).strip(".-") or "itf"
    record: dict[str, Any] = {
        "corpus": 1,
        "id": trace_id,
        "shape": "itf",
        "title": ours.get("title") or meta.get("description") or f"ITF trace {Path(file).name}",
        "source": f"ITF {file}" + (f" (from {meta['source']})" if isinstance(meta.get("source"), str) else ""),
        "config": config,
        "steps": steps,
        "provenance": {"itf": file, **({"kconform_id": ours["id"]} if "id" in ours else {})},
    }
    if initial is not None:
        record["initial"] = initial
    return record


def _step(state: Mapping[str, Any], where: str) -> dict[str, Any]:
    if "action" in state:
        action = decode(state["action"], "action")
    elif "mbt::actionTaken" in state:
        picks = decode(state.get("mbt::nondetPicks", {}), "mbt::nondetPicks") or {}
        if not isinstance(picks, dict):
            raise ValueError("mbt::nondetPicks: must be a record of picks")
        action = {"kind": decode(state["mbt::actionTaken"], "mbt::actionTaken")}
        action.update({k: v for k, v in picks.items() if v is not None})
    else:
        raise ValueError("no action (the variable action, or mbt::actionTaken)")
    if not isinstance(action, dict):
        raise ValueError("action: must be a record (a step, as a fixture's do)")
    step: dict[str, Any] = {"do": action}
    rejected = decode(state.get("rejected", ""), "rejected")
    meta: Mapping[str, Any] = state["#meta"] if isinstance(state.get("#meta"), dict) else {}
    if rejected:
        if not isinstance(rejected, str):
            raise ValueError("rejected: must be a string (why the step is refused) or empty")
        step["expect_rejected"] = rejected
    else:
        if "observation" not in state:
            raise ValueError("no observation (the variable observation)")
        observation = decode(state["observation"], "observation")
        if observation is not None:
            if not isinstance(observation, dict):
                raise ValueError("observation: must be a record (an observation) or None")
            step["expect"] = observation
    if isinstance(meta.get("why"), str):
        step["why"] = meta["why"]
    if isinstance(meta.get("logs_match"), list):
        step["logs_match"] = meta["logs_match"]
    return step


def read_itf(path: Path) -> dict[str, Any]:
    """The corpus line of one ``.itf.json`` file; raise ``ItfError``."""
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise ItfError(str(path), "", f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ItfError(str(path), "", f"not UTF-8 (byte {exc.start + 1})") from None
    except json.JSONDecodeError as exc:
        raise ItfError(str(path), f"line {exc.lineno} column {exc.colno}", f"not JSON: {exc.msg}") from None
    return itf_to_record(data, str(path))
