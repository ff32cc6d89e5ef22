"""The stdio adapter's process handling: a process killed under a busy stderr leaves no
thread traceback on the user's terminal (the pump that keeps the stderr tail ends quietly)."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

import pytest

from conformance.adapters.stdio import StdioAdapter

CHATTY = "import sys\nwhile True:\n    sys.stderr.write('x' * 200 + '\\n')\n    sys.stderr.flush()\n"


def test_killing_a_chatty_process_ends_its_stderr_pump_quietly(monkeypatch: pytest.MonkeyPatch) -> None:
    raised: list[Any] = []
    monkeypatch.setattr(threading, "excepthook", raised.append)
    adapter = StdioAdapter([sys.executable, "-c", CHATTY])
    for _ in range(5):
        adapter._start()
        # the pump is reading: wait for its first lines (a loaded machine may take a while to
        # start the process), then kill it mid-stream
        deadline = time.monotonic() + 30
        while not adapter._stderr and time.monotonic() < deadline:
            time.sleep(0.01)
        assert adapter._stderr, "the process wrote nothing to stderr within 30 s"
        time.sleep(0.02)
        pump = adapter._stderr_pump
        adapter._kill()
        pump.join(timeout=2)
        assert not pump.is_alive()
    assert not raised, [str(args.exc_value) for args in raised]
    assert adapter._stderr, "the pump kept the process's last stderr lines"
