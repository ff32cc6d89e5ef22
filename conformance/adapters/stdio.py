"""The stdio adapter: drive any program that speaks spec/adapter-protocol.md.

One JSON line each way per request, a timeout on every reply, stderr captured, and a
fresh process after any failure. Every failure becomes an ``AdapterError`` whose detail
holds what a user needs to fix the adapter: the last request and reply and the tail of
stderr.

Protocol 4's ``observation_deltas`` option is offered in every ``hello`` (unless
``deltas=False``): an adapter that opts in answers steps with only what changed, and this
adapter rebuilds the whole observation (``deltas.apply_delta``) before the runner sees it,
so nothing downstream knows the difference.

Protocol 4's ``pipelining`` option is offered too (unless ``pipelining=False``): to an
adapter that opts in, the judge sends steps ahead (``send_ahead``, up to ``MAX_AHEAD``)
before it reads the replies, so a step costs no wake-up of either process (most of a stdio
step's cost on small observations). Replies are still read one at a time, in order, each
checked as before.
"""

from __future__ import annotations

import json
import os
import select
import shlex
import subprocess
import threading
import time
from collections import deque
from typing import Any

from .base import ACCEPTED_PROTOCOLS, PROTOCOL_VERSION, Adapter, AdapterError, Description, StepResult
from .deltas import DeltaError, apply_delta

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_START_TIMEOUT_S = 60.0
"""How long a new process may take to answer ``hello``: starting a runtime (a JVM, an
interpreter importing its packages, on a loaded machine) can take far longer than a step."""
_encode = json.JSONEncoder(separators=(",", ":")).encode
"""One compact encoder for every request (``json.dumps`` with separators builds one per call)."""
MAX_AHEAD = 32
"""Steps in flight at most with ``pipelining``: past a few the cost per step stops falling
(a bare round trip between two Python processes: 62 us of CPU one at a time, 12 us with 16
in flight)."""
MAX_AHEAD_BYTES = 16384
"""Bytes of requests in flight at most (a pipe holds 16-64 KiB): kconform's writes then
never block, so a program blocked writing replies kconform has not read yet cannot
deadlock it."""
EXIT_GRACE_S = 5.0
"""How long a process that closed its output may take to exit before it is reported as
still running (and killed). Its exit code and the end of its stderr are read only
after it has exited, so a report never misses them."""


class StdioAdapter(Adapter):
    """An implementation running as a child process (``exec:COMMAND``)."""

    shares_observations = True
    """kconform builds every observation itself, from the reply's JSON or by applying a delta
    to the previous one (``deltas.apply_delta``: the parts it does not change are the
    previous observation's objects, a large changed producer map is ``Amended``), and never changes
    one afterwards: the judge compares and monitors the unchanged parts by identity."""

    def __init__(
        self,
        command: str | list[str],
        timeout_s: float = DEFAULT_TIMEOUT_S,
        cwd: str | None = None,
        start_timeout_s: float = DEFAULT_START_TIMEOUT_S,
        deltas: bool = True,
        pipelining: bool = True,
    ) -> None:
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.argv:
            raise ValueError("empty command")
        self.timeout_s = timeout_s
        self.start_timeout_s = start_timeout_s
        self.cwd = cwd
        self._proc: subprocess.Popen[bytes] | None = None
        self._pending = bytearray()
        """Output read past the last whole line (a reply arrives in one or more reads)."""
        self._stderr: deque[str] = deque(maxlen=40)
        self._stderr_pump: threading.Thread | None = None
        self._seq = 0
        self._last_request = ""
        self._last_reply = ""
        self._description: Description | None = None
        self.offer_deltas = deltas
        """Offer the ``observation_deltas`` option in ``hello`` (protocol 4)."""
        self.deltas = False
        """The running process opted in: its step replies may carry ``observation_delta``."""
        self._last_observation: dict[str, Any] | None = None
        """The run's last whole observation, what the next delta applies to (None after reset)."""
        self.offer_pipelining = pipelining
        """Offer the ``pipelining`` option in ``hello`` (protocol 4)."""
        self.pipelining = False
        """The running process opted in: steps may be sent ahead (``send_ahead``)."""
        self._ahead: deque[tuple[int, dict[str, Any], str, int]] = deque()
        """Steps sent ahead whose replies are not read yet: (seq, the step, its line, its bytes)."""
        self._ahead_bytes = 0

    # --- process management -------------------------------------------------------

    def _start(self) -> None:
        try:
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                cwd=self.cwd,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        except OSError as exc:
            raise AdapterError(f"cannot run {shlex.join(self.argv)}: {exc.strerror or exc}") from None
        self._pending = bytearray()
        self._stderr.clear()
        self._seq = 0
        proc = self._proc
        self._stderr_pump = threading.Thread(target=self._pump_stderr, args=(proc, self._stderr), daemon=True)
        self._stderr_pump.start()

    @staticmethod
    def _pump_stderr(proc: subprocess.Popen[bytes], tail: deque[str]) -> None:
        """Keep the last lines the process wrote to stderr (for error messages), until it
        ends or ``close`` closes the pipe under this thread (then there is nothing more to
        keep: the ValueError or OSError of reading a closed file ends the thread quietly)."""
        assert proc.stderr is not None
        try:
            for line in proc.stderr:
                tail.append(line.decode("utf-8", "replace").rstrip("\n"))
        except (ValueError, OSError):
            return

    def _read_line(self, timeout_s: float) -> bytes | None:
        """The next line of the process's output (without its newline); None at its end.

        Read in this thread with ``select`` (no reader thread to hand lines over: a step is
        one wake-up of each process, which is most of a stdio step's cost). Raises
        ``TimeoutError`` when no whole line arrives within ``timeout_s``."""
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        pending = self._pending
        scanned = 0  # a long reply arrives in many reads: look for the newline in new bytes only
        while True:
            end = pending.find(b"\n", scanned)
            if end >= 0:
                line = bytes(pending[:end])
                del pending[: end + 1]
                return line
            scanned = len(pending)
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            pending += chunk

    def _kill(self) -> None:
        self._ahead.clear()  # a new process has nothing in flight
        self._ahead_bytes = 0
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            proc.kill()
            proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        pump = getattr(self, "_stderr_pump", None)
        if pump is not None and pump is not threading.current_thread():
            pump.join(timeout=1)  # the process is gone: its stderr ends, and the pump with it
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def _detail(self) -> str:
        parts = [f"command: {shlex.join(self.argv)}"]
        if self._last_request:
            parts.append(f"last request: {self._last_request}")
        if self._last_reply:
            parts.append(f"last reply: {self._last_reply}")
        if self._stderr:
            parts.append("stderr (tail):\n" + "\n".join(self._stderr))
        return "\n".join(parts)

    def _await_exit(self) -> int | None:
        """The exit code of a process that stopped talking (it closed stdout or stdin),
        waiting up to ``EXIT_GRACE_S`` for it to exit and for its stderr to drain;
        None if it is still running."""
        proc = self._proc
        if proc is None:
            return None
        try:
            code = proc.wait(timeout=EXIT_GRACE_S)
        except subprocess.TimeoutExpired:
            return None
        if self._stderr_pump is not None:
            self._stderr_pump.join(timeout=EXIT_GRACE_S)
        return code

    def _fail(self, message: str, code: int | None = None) -> AdapterError:
        if code is None and self._proc is not None:
            code = self._proc.poll()
        if code is not None:
            message += f" (process exited with code {code})"
        error = AdapterError(message, self._detail())
        self._kill()
        return error

    def _gone(self, while_doing: str) -> AdapterError:
        """The process stopped talking: say whether it exited (and how) or is still running."""
        code = self._await_exit()
        if code is None:
            return self._fail(f"{while_doing}; it was still running {EXIT_GRACE_S:g} s later and was killed")
        return self._fail(while_doing, code)

    # --- one exchange ---------------------------------------------------------------

    def _request(self, message: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        if self._ahead:
            self._drain()
        if self._proc is None:
            self._start()
            self._hello()
        sent = self._send(message)
        assert sent is not None  # (no room limit: always written)
        seq, line = sent
        return self._receive(seq, message["cmd"], line, timeout_s)

    def _send(self, message: dict[str, Any], room: int | None = None, ahead: bool = False) -> tuple[int, str] | None:
        """Write one request; its seq and line (the reply is read by ``_receive``). With
        ``room``: only if its line takes at most that many bytes (None: not written).

        ``ahead``: a step sent before the replies to earlier ones are read. If the process
        no longer reads its input, it is not written (None) and nothing is raised: the
        replies it wrote before it stopped are still to be read and judged, and the step
        whose reply is missing is the one the failure is reported at (``_receive``, or this
        method when that step is sent on its own)."""
        assert self._proc is not None and self._proc.stdin is not None
        message = {**message, "seq": self._seq + 1}
        line = _encode(message)
        if room is not None and len(line) + 1 > room:
            return None
        said = self._last_request, self._last_reply
        self._seq += 1
        self._last_request, self._last_reply = line, ""
        try:
            data = (line + "\n").encode()
            fd = self._proc.stdin.fileno()
            while data:
                data = data[os.write(fd, data) :]
        except OSError:
            if ahead:  # (every later write fails the same way: the pipe has no reader)
                self._seq -= 1
                self._last_request, self._last_reply = said
                return None
            raise self._gone(f"the process stopped reading its input before the {message['cmd']} request") from None
        return self._seq, line

    def _receive(self, seq: int, cmd: str, line: str, timeout_s: float | None = None) -> dict[str, Any]:
        """The reply to request ``seq`` (``line``, named in errors), checked: a JSON object
        with that seq and a boolean ``ok`` that is true."""
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        self._last_request, self._last_reply = line, ""
        try:
            raw = self._read_line(timeout_s)
        except TimeoutError:
            raise self._fail(f"no reply within {timeout_s:g} s") from None
        if raw is None:
            raise self._gone("the process ended without replying")
        text = raw.decode("utf-8", "replace").rstrip("\r")
        self._last_reply = text[:2000]
        try:
            reply = json.loads(text)
        except json.JSONDecodeError as exc:
            raise self._fail(f"reply is not JSON ({exc.msg})") from None
        if not isinstance(reply, dict):
            raise self._fail("reply is not a JSON object")
        if reply.get("seq") != seq:
            raise self._fail(f"reply has seq {reply.get('seq')!r}, expected {seq}")
        if not isinstance(reply.get("ok"), bool):
            raise self._fail("reply has no boolean 'ok'")
        if not reply["ok"]:
            error = reply.get("error")
            raise self._fail(f"{cmd} failed: {error if isinstance(error, str) else 'no error message'}")
        return reply

    def _drain(self) -> None:
        """Read and drop the replies to steps sent ahead that the judge no longer wants (its
        run ended early). They are not judged, so what they say does not matter; a process
        that does not answer them (ends, hangs, writes garbage) is killed quietly, and the
        next request starts a fresh one."""
        try:
            while self._ahead:
                seq, _, line, _ = self._ahead.popleft()
                try:
                    self._receive(seq, "step", line)
                except AdapterError:  # an ``ok: false`` too: the process was killed by ``_fail``
                    return
        finally:
            self._ahead.clear()
            self._ahead_bytes = 0

    def _hello(self) -> None:
        offers = (("observation_deltas", self.offer_deltas), ("pipelining", self.offer_pipelining))
        options = [name for name, offered in offers if offered]
        reply = self._request({"cmd": "hello", "protocol": PROTOCOL_VERSION, "options": options}, self.start_timeout_s)
        if reply.get("protocol") not in ACCEPTED_PROTOCOLS:
            accepted = " or ".join(map(str, ACCEPTED_PROTOCOLS))
            raise self._fail(f"speaks protocol {reply.get('protocol')!r}, kconform speaks {accepted}")
        impl = reply.get("implementation")
        try:
            if not isinstance(impl, dict):
                raise TypeError("no implementation object")
            self._description = Description.from_dict(impl)
        except (KeyError, TypeError, ValueError) as exc:
            raise self._fail(f"hello reply has no valid 'implementation' ({exc})") from None
        opted = (impl.get("capabilities") or {}).get("observation_deltas") is True
        if opted and not self.offer_deltas:
            raise self._fail("hello reply declares observation_deltas, which kconform did not offer in its hello")
        self.deltas = opted  # declaring the option (offered above) is the opt-in, whatever version it answered
        piped = (impl.get("capabilities") or {}).get("pipelining") is True
        if piped and not self.offer_pipelining:
            raise self._fail("hello reply declares pipelining, which kconform did not offer in its hello")
        self.pipelining = piped
        self._last_observation = None

    # --- Adapter ------------------------------------------------------------------------

    def describe(self) -> Description:
        if self._description is None:
            self._start()
            self._hello()
        assert self._description is not None
        return self._description

    def reset(self, config: dict[str, Any], initial: dict[str, Any] | None = None) -> None:
        self._last_observation = None  # a run's first observation is always whole
        self._request({"cmd": "reset", "config": config, **({"initial": initial} if initial is not None else {})})

    def send_ahead(self, step: dict[str, Any]) -> bool:
        if not self.pipelining or self._proc is None:
            return False
        if len(self._ahead) >= MAX_AHEAD:
            return False
        # the first step in flight always goes (nothing is waiting on the pipe)
        room = MAX_AHEAD_BYTES - self._ahead_bytes if self._ahead else None
        sent = self._send({"cmd": "step", "step": step}, room, ahead=True)
        if sent is None:
            return False
        seq, line = sent
        self._ahead.append((seq, step, line, len(line) + 1))
        self._ahead_bytes += len(line) + 1
        return True

    def step(self, step: dict[str, Any]) -> StepResult:
        if self._ahead:
            seq, sent, line, size = self._ahead.popleft()
            self._ahead_bytes -= size
            if sent is not step:
                raise self._fail(
                    "kconform asked for the answer to a step other than the one it sent ahead (a kconform bug: "
                    f"sent {line}, asked for {_encode(step)[:200]})"
                )
            reply = self._receive(seq, "step", line)
        else:
            reply = self._request({"cmd": "step", "step": step})
        rejected = reply.get("rejected")
        if rejected is not None:
            if not isinstance(rejected, dict) or not isinstance(rejected.get("reason"), str):
                raise self._fail("'rejected' must be an object with a 'reason' string")
            rule = rejected.get("rule")
            return StepResult(rejected=rejected["reason"], rule=rule if isinstance(rule, str) else None)
        observation = reply.get("observation")
        delta = reply.get("observation_delta")
        if delta is not None:
            observation = self._rebuild(delta, observation)
        elif not isinstance(observation, dict):
            raise self._fail("step reply has neither an 'observation' object nor 'rejected'")
        self._last_observation = observation
        fired = reply.get("fired") or ()
        return StepResult(observation=observation, fired=tuple(str(r) for r in fired))

    def _rebuild(self, delta: Any, whole: Any) -> dict[str, Any]:
        """The whole observation an ``observation_delta`` reply describes."""
        if not self.deltas:
            raise self._fail(
                "step reply carries observation_delta, but the adapter did not opt into observation_deltas"
            )
        if whole is not None:
            raise self._fail("step reply carries both 'observation' and 'observation_delta'")
        if self._last_observation is None:
            raise self._fail(
                "step reply carries observation_delta, but the first observation after reset must be whole "
                "('observation')"
            )
        try:
            return apply_delta(self._last_observation, delta)
        except DeltaError as exc:
            raise self._fail(f"observation_delta does not apply to the previous observation: {exc}") from None

    def restart(self) -> None:
        self._kill()
        self._start()
        self._hello()

    def close(self) -> None:
        if self._proc is None:
            return
        try:
            self._request({"cmd": "close"})
        except AdapterError:
            return
        proc = self._proc
        if proc is not None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()
                proc.wait(timeout=3)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill()
