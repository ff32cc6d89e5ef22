"""The adapter SDK: connect an existing implementation to kconform with five callbacks.

Everything that is protocol and not replication is done here: the ``hello`` handshake and
version, ``seq`` numbers, one JSON line each way, errors as ``ok: false`` with the
traceback on stderr, refusals as ``rejected`` (your own precondition exceptions listed in
``refusals``), and kconform's produce ids mapped to your own request handles. What is left
to write is the mapping (spec/adapter-protocol.md; a complete example:
examples/toy_broker_adapter.py)::

    class MyAdapter(sdk.Adapter):
        name, generations = "my-broker", ("leader-epoch",)
        steps = ("produce", "fetch_round", "tick")
        fields, replica_fields = ("replicas",), ("leo", "hw")

        def reset(self, config): ...           # 1. a fresh partition
        def step(self, step): ...              # 2. apply one step (raise sdk.Refused to refuse)
        def observe(self): ...                 # 3. the observation after it
        def describe(self): ...                # 4. optional: extra capabilities
        def close(self): ...                   # 5. optional: release

    if __name__ == "__main__":
        sdk.serve(MyAdapter())                 # stdio: kconform run --impl 'exec:python3 my.py'

``sdk.in_process(MyAdapter())`` gives the same adapter as a ``conformance`` adapter, for
``--impl module:factory``.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any, TextIO

from .adapters.base import ACCEPTED_PROTOCOLS, PROTOCOL_VERSION, StepResult
from .adapters.base import Adapter as _Seam
from .adapters.base import AdapterError as _AdapterError
from .adapters.base import Description as _Description
from .adapters.deltas import diff

_encode = json.JSONEncoder(separators=(",", ":")).encode
"""One compact encoder for every reply (``json.dumps`` with separators builds one per call)."""


class Refused(Exception):
    """Raise from ``step`` when the step's precondition does not hold in this state."""

    def __init__(self, reason: str, rule: str | None = None) -> None:
        super().__init__(reason)
        self.reason, self.rule = reason, rule


class ProduceIds:
    """kconform's produce ids (``p1``, ...) and your own handles for the same requests."""

    def __init__(self) -> None:
        self.by_id: dict[str, Any] = {}

    def bind(self, produce_id: str, handle: Any) -> None:
        self.by_id[produce_id] = handle

    def statuses(self, status_of: Any) -> dict[str, str]:
        """``{produce id: status}``, from ``status_of(handle) -> str``."""
        return {pid: status_of(handle) for pid, handle in self.by_id.items()}


class Adapter:
    """Subclass and fill in: the capabilities as class attributes, and the callbacks."""

    name = "my-implementation"
    version = "0"
    language = "python"
    generations: tuple[str, ...] = ("leader-epoch",)
    steps: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()
    replica_fields: tuple[str, ...] = ()
    refusals: tuple[type[BaseException], ...] = ()
    """Your own exceptions that mean "not possible in this state": answered as ``rejected``."""
    initial_state = False
    """Protocol 3: True if ``reset_from`` can start from a given state (``initial:`` fixtures)."""
    observation_deltas = True
    """Protocol 4: answer steps with only what changed when kconform offers it (the SDK diffs
    consecutive observations itself; ``observe`` must return fresh data each time, as it
    keeps the previous one to diff against). Set False to always send whole observations."""
    _deltas = False
    """kconform offered ``observation_deltas`` and this adapter opted in (set by ``hello``)."""
    pipelining = True
    """Protocol 4: let kconform send several requests before it reads the replies, when it
    offers it (``serve`` reads one request at a time and answers in order, so any adapter
    can; set False to be asked one request at a time)."""
    _pipelining = False
    _previous: dict[str, Any] | None = None
    """The run's last observation sent: what the next delta is computed from."""

    def __init__(self) -> None:
        self.produce_ids = ProduceIds()

    def describe(self) -> dict[str, Any]:
        """Extra capabilities (``role_fields``, ``step_fields``, ``conventions``)."""
        return {}

    def reset(self, config: dict[str, Any]) -> None:
        raise NotImplementedError

    def reset_from(self, config: dict[str, Any], initial: dict[str, Any]) -> None:
        """Optional (with ``initial_state = True``): start from the given state (spec/adapter-protocol.md)."""
        raise NotImplementedError

    def step(self, step: dict[str, Any]) -> None:
        raise NotImplementedError

    def observe(self) -> dict[str, Any]:
        raise NotImplementedError

    def close(self) -> None:
        """Release what the implementation holds."""

    # --- what the SDK does with them ---------------------------------------------------

    def implementation(self, deltas: bool = False, pipelining: bool = False) -> dict[str, Any]:
        """The hello reply's ``implementation``; ``deltas``: declare ``observation_deltas``;
        ``pipelining``: declare ``pipelining``."""
        caps: dict[str, Any] = {
            "steps": list(self.steps),
            "fields": list(self.fields),
            "replica_fields": list(self.replica_fields),
            **({"initial_state": True} if self.initial_state else {}),
            **({"observation_deltas": True} if deltas else {}),
            **({"pipelining": True} if pipelining else {}),
        }
        caps.update(self.describe())
        return {
            "name": self.name,
            "version": self.version,
            "language": self.language,
            "generations": list(self.generations),
            "capabilities": caps,
        }

    def _reset(self, config: dict[str, Any], initial: dict[str, Any] | None = None) -> None:
        self.produce_ids = ProduceIds()
        self._previous = None  # a run's first observation is always whole
        if initial is None:
            self.reset(config)
        else:
            self.reset_from(config, initial)

    def _step(self, step: dict[str, Any]) -> dict[str, Any]:
        """The reply body for one step: an observation or a refusal."""
        try:
            self.step(step)
        except Refused as exc:
            return {"rejected": {"reason": exc.reason, **({"rule": exc.rule} if exc.rule else {})}}
        except self.refusals as exc:
            return {"rejected": {"reason": str(exc) or type(exc).__name__}}
        observation = self.observe()
        previous, self._previous = self._previous, observation
        if self._deltas and previous is not None:
            return {"observation_delta": diff(previous, observation)}
        return {"observation": observation}

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """One request -> one reply (without ``seq``)."""
        cmd = request.get("cmd")
        if cmd == "hello":
            asked = request.get("protocol")
            version = asked if asked in ACCEPTED_PROTOCOLS else PROTOCOL_VERSION
            options = request.get("options") or ()
            self._deltas = self.observation_deltas and version >= 4 and "observation_deltas" in options
            self._pipelining = self.pipelining and version >= 4 and "pipelining" in options
            implementation = self.implementation(self._deltas, self._pipelining)
            return {"ok": True, "protocol": version, "implementation": implementation}
        if cmd == "reset":
            self._reset(request["config"], request.get("initial"))
            return {"ok": True}
        if cmd == "step":
            return {"ok": True, **self._step(request["step"])}
        if cmd == "close":
            self.close()
            return {"ok": True}
        return {"ok": False, "error": f"unknown command {cmd!r}"}


def serve(adapter: Adapter, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
    """Answer kconform's requests on stdin until ``close`` or end of input."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    for line in stdin:
        if not line.strip():
            continue
        seq = None
        request: Any = None
        try:
            request = json.loads(line)
        except ValueError as exc:  # kconform never sends this; say so and keep serving
            reply = {"ok": False, "error": f"request is not JSON: {exc.args[0] if exc.args else exc}"}
        else:
            if not isinstance(request, dict):
                reply = {"ok": False, "error": f"a request is a JSON object, got {type(request).__name__}"}
            else:
                seq = request.get("seq")
                try:
                    reply = adapter.handle(request)
                except Exception as exc:  # any failure is the implementation's: report it, keep serving
                    traceback.print_exc(file=sys.stderr)
                    reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        stdout.write(_encode({"seq": seq, **reply}) + "\n")
        stdout.flush()
        if isinstance(request, dict) and request.get("cmd") == "close":
            return


class _InProcess(_Seam):
    def __init__(self, adapter: Adapter) -> None:
        self.adapter = adapter

    def describe(self) -> _Description:
        return _Description.from_dict(self.adapter.implementation())

    def reset(self, config: dict[str, Any], initial: dict[str, Any] | None = None) -> None:
        try:
            self.adapter._reset(config, initial)
        except Exception as exc:
            raise _AdapterError(f"reset failed: {type(exc).__name__}: {exc}", traceback.format_exc()) from None

    def step(self, step: dict[str, Any]) -> StepResult:
        reply = self.adapter._step(step)
        if "rejected" in reply:
            return StepResult(rejected=reply["rejected"]["reason"], rule=reply["rejected"].get("rule"))
        return StepResult(observation=reply["observation"])

    def close(self) -> None:
        self.adapter.close()


def in_process(adapter: Adapter) -> _Seam:
    """The same adapter, driven in this process (``--impl module:factory``)."""
    return _InProcess(adapter)
