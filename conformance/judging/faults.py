"""What to report when an implementation failed to answer a step or a restart.

Shared by the runner (a fixture's setup, restarts) and the judge (each step), so neither
imports the other for it.
"""

from __future__ import annotations

import traceback

from ..adapters.base import AdapterError


def fault(exc: Exception) -> tuple[str, str]:
    """Reason and diagnostics for an implementation that failed to answer: an
    ``AdapterError`` carries its own; anything else an in-process implementation raised
    is reported with its traceback."""
    if isinstance(exc, AdapterError):
        return exc.message, exc.detail
    return f"the implementation raised {type(exc).__name__}: {exc}", traceback.format_exc()
