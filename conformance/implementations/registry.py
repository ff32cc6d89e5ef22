"""Naming an implementation on the command line.

Three forms:

- a registered name: an entry point in the ``kconform.implementations`` group whose
  object is a zero-argument factory returning an ``Adapter`` (kconform's bundled ones,
  or any installed package's);
- ``module:factory`` (or ``module:Class``): an in-process Python implementation, imported
  from the current folder first (as ``python -m`` does), then from the installed packages;
- ``exec:COMMAND``: a program speaking the stdio protocol (spec/adapter-protocol.md);
- ``zoo:NAME``: a faulty implementation from the zoo (``conformance/zoo``).
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from dataclasses import dataclass
from types import ModuleType

from ..adapters.base import Adapter
from ..adapters.stdio import DEFAULT_START_TIMEOUT_S, DEFAULT_TIMEOUT_S, StdioAdapter
from .bundled import BUNDLED

GROUP = "kconform.implementations"


class UnknownImplementation(Exception):
    """The name does not resolve; the message lists what does."""


class ImplementationUnavailable(Exception):
    """Raised by a factory when its implementation cannot start on this machine (not
    built, a tool missing): the message says what to install or run, and is shown as it
    is (``kconform: NAME: MESSAGE``), not as a fault of the factory."""


@dataclass(frozen=True)
class Registered:
    name: str
    target: str
    summary: str


def registered() -> list[Registered]:
    from importlib.metadata import entry_points

    out = []
    for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        summary = ""
        try:
            doc = (ep.load().__doc__ or "").strip()
            summary = doc.splitlines()[0] if doc else ""
        except Exception as exc:  # a broken third-party entry point must not hide the others
            summary = f"(cannot load: {exc})"
        out.append(Registered(ep.name, ep.value, summary))
    return out


def resolve(
    spec: str, timeout_s: float = DEFAULT_TIMEOUT_S, start_timeout_s: float = DEFAULT_START_TIMEOUT_S
) -> Adapter:
    """Build the adapter named by ``spec``; raise ``UnknownImplementation`` if none."""
    if spec.startswith("exec:"):
        command = spec[len("exec:") :].strip()
        if not command:
            raise UnknownImplementation("exec: needs a command, e.g. exec:'./my-adapter --stdio'")
        return StdioAdapter(command, timeout_s=timeout_s, start_timeout_s=start_timeout_s)
    if spec.startswith("zoo:"):
        from ..zoo import UnknownMember, get

        try:
            return get(spec[len("zoo:") :]).build()
        except UnknownMember as exc:
            raise UnknownImplementation(f"{spec}: {exc}") from None
    if spec in BUNDLED:
        return _call(BUNDLED[spec], spec)
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group=GROUP) if ep.name == spec]
    if found:
        return _call(found[0].load(), spec)
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
        here = os.getcwd()
        if here not in sys.path and "" not in sys.path:
            sys.path.insert(0, here)
        module = _import(spec, module_name, here)
        try:
            factory = getattr(module, attr)
        except AttributeError:
            raise UnknownImplementation(f"{spec}: module {module_name!r} has no {attr!r}") from None
        return _call(factory, spec)
    names = ", ".join(r.name for r in registered()) or "(none)"
    raise UnknownImplementation(
        f"unknown implementation {spec!r}: use a registered name ({names}), module:factory, or exec:COMMAND"
    )


def _import(spec: str, module_name: str, here: str) -> ModuleType:
    """Import the adapter module; every way that fails is one ``UnknownImplementation``
    line: a module that is not there, one whose own import of a dependency fails (named
    as such, not as "not found"), a syntax error (file:line) or an exception it raises."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name != module_name and not module_name.startswith(exc.name + "."):
            raise UnknownImplementation(
                f"{spec}: module {module_name!r} was found but its import of {exc.name!r} failed: {exc} "
                "(install that dependency in this environment)"
            ) from None
        raise UnknownImplementation(
            f"{spec}: cannot import {module_name!r}: {exc} "
            f"(looked in the current folder {here} and the installed packages)"
        ) from None
    except SyntaxError as exc:
        where = f"{exc.filename}:{exc.lineno}" if exc.filename else module_name
        raise UnknownImplementation(f"{spec}: {where}: syntax error in the adapter module: {exc.msg}") from None
    except ImportError as exc:
        raise UnknownImplementation(f"{spec}: cannot import {module_name!r}: {exc}") from None
    except Exception as exc:  # the user's module raised while importing: report it, never a traceback
        raise UnknownImplementation(
            f"{spec}: importing {module_name!r} raised {type(exc).__name__}: {exc}{_origin(exc)}"
        ) from None


def _origin(exc: BaseException) -> str:
    """`` (at file:line)``: the innermost frame of ``exc``, where the user's code raised."""
    tb = exc.__traceback__
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    return f" (at {tb.tb_frame.f_code.co_filename}:{tb.tb_lineno})"


def _call(factory: object, spec: str) -> Adapter:
    if not callable(factory):
        raise UnknownImplementation(f"{spec}: {factory!r} is not callable")
    try:
        inspect.signature(factory).bind()
    except TypeError as exc:
        raise UnknownImplementation(
            f"{spec}: the factory must take no arguments and return a kconform Adapter ({exc})"
        ) from None
    except ValueError:  # no signature to read (a builtin): calling it tells
        pass
    try:
        adapter = factory()
    except ImplementationUnavailable as exc:  # it says what to do
        raise UnknownImplementation(f"{spec}: {exc}") from None
    except Exception as exc:  # the user's factory: report it, never a traceback
        raise UnknownImplementation(
            f"{spec}: calling the factory raised {type(exc).__name__}: {exc}{_origin(exc)}"
        ) from None
    if not isinstance(adapter, Adapter):
        raise UnknownImplementation(f"{spec}: the factory returned {type(adapter).__name__}, not a kconform Adapter")
    return adapter
