"""What the ``kconform`` commands share: failing with a usage message, writing to a closed
pipe, tables fitted to the terminal, fixture selection, a command's parser and the
option groups several commands take, the known differences an expectations file gives.
Public, so each command module (``run``, ``inspection``, ``report``, ``diff``, ``fuzz``,
``explore``, ``sensitivity``, ``corpus``, ``itf``) imports it and none imports another
command module: ``main`` alone assembles them.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from reference_impl.config import Generation

from ..adapters.base import AdapterError
from ..adapters.stdio import DEFAULT_START_TIMEOUT_S, DEFAULT_TIMEOUT_S
from ..fixtures.paths import FIXTURES_DIR

if TYPE_CHECKING:
    from ..fixtures.loading import Fixture

DEFAULT_RESULTS = Path("out/kconform-results.json")


FORMATS = ("terminal", "markdown", "html", "json", "junit")


GENERATIONS = tuple(g.value for g in Generation)


class UsageError(Exception):
    """Bad input: reported on stderr, exit code 2."""


def fail(message: str) -> NoReturn:
    raise UsageError(message)


def emit(text: str) -> None:
    """Write to stdout; a reader that went away (``| head``) ends the output quietly,
    and the command still finishes (a run's results file and exit code stand)."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def table(rows: list[list[Any]], headers: list[str], **options: Any) -> str:
    """A plain table, fitted to the terminal's width (no id broken: ``reports/fit.py``);
    ``maxcolwidths`` caps columns, wrapping at spaces only."""
    from ..reports.fit import fit, terminal_width

    caps = options.pop("maxcolwidths", None)
    return fit(rows, headers, "simple", caps=caps, width=terminal_width(), **options)


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def color_enabled(choice: str, stream: TextIO) -> bool:
    """``auto``: colour on a terminal unless NO_COLOR is set (no-color.org)."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def add_selection(p: argparse.ArgumentParser) -> None:
    """The fixture selection options. Fixture files and folders may also be named without
    ``--fixtures`` (``kconform run my-story.yaml``, as ``validate`` and ``explain`` take
    them): ``fixture_paths`` merges them in."""
    p.add_argument(
        "--fixtures",
        action="append",
        type=Path,
        metavar="PATH",
        help="fixture file or folder (repeatable; default: the bundled fixtures/)",
    )
    p.add_argument(
        "paths", nargs="*", type=Path, metavar="PATH", help="fixture files or folders, the same as --fixtures PATH"
    )
    p.add_argument(
        "--tag", action="append", default=[], help="only fixtures with this tag (repeatable: any of them; default: all)"
    )
    p.add_argument(
        "--generation",
        action="append",
        default=[],
        choices=GENERATIONS,
        help="only fixtures run under this generation (repeatable; default: all)",
    )
    p.add_argument(
        "--id",
        action="append",
        default=[],
        metavar="GLOB",
        help="only fixture ids matching, e.g. 'seed-03*' or 'kip-320-fencing/*' (repeatable; default: all)",
    )


def fixture_paths(args: argparse.Namespace) -> list[Path] | None:
    """The fixture files and folders the command line names, with ``--fixtures`` or
    without (None: the bundled fixtures)."""
    for path in args.paths:
        if not path.exists() and _names_an_implementation(str(path)):
            fail(
                f"{path}: no such fixture file or folder, but it names an implementation: "
                f"repeat --impl for each one (--impl A --impl {path})"
            )
    named = [*(args.fixtures or ()), *args.paths]
    return named or None


def _names_an_implementation(text: str) -> bool:
    """Whether a command-line word that is not a file reads as ``--impl``'s value (a
    bundled or registered name, ``exec:``, ``zoo:``): ``run --impl A B`` takes B for a
    fixture path, and "no such file" alone does not say why."""
    if text.startswith(("exec:", "zoo:")):
        return True
    from importlib.metadata import entry_points

    from ..implementations.bundled import BUNDLED

    return text in BUNDLED or any(ep.name == text for ep in entry_points(group="kconform.implementations"))


def load_fixtures_under(paths: list[Path] | None) -> list[Fixture]:
    """Every fixture under ``paths``; exit 2 on any problem or when there is none."""
    from ..fixtures.loading import fixture_files, load_fixtures

    paths = paths or [FIXTURES_DIR]
    fixtures, problems = load_fixtures(paths)
    if problems:
        fail("invalid fixtures:\n" + "\n".join(str(p) for p in problems))
    if not fixtures:
        where = ", ".join(str(p) for p in paths)
        found = fixture_files(paths)
        fail(f"no fixture files (*.yaml, *.yml) under {where}" if not found else f"no fixtures in {where}")
    return fixtures


def select(args: argparse.Namespace) -> list[Fixture]:
    fixtures = load_fixtures_under(fixture_paths(args))
    out = []
    for f in fixtures:
        if args.tag and not set(args.tag) & set(f.tags):
            continue
        if args.generation and f.generation.value not in args.generation:
            continue
        if args.id and not any(fnmatch.fnmatchcase(f.id, g) or fnmatch.fnmatchcase(f.base_id, g) for g in args.id):
            continue
        out.append(f)
    if not out:
        fail("no fixture matches the selection (see `kconform list`)")
    return out


def terminal_options(args: argparse.Namespace) -> dict[str, Any]:
    if args.format != "terminal":
        return {}
    return {
        "rules": args.rules,
        "matrix": args.matrix,
        "all_failures": args.all_failures,
        "color": color_enabled(args.color, sys.stdout),
    }


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the epilog's layout; argument help states its own defaults."""


EPILOG = """\
exit codes:
  0  every result as expected
  1  some result unexpected: FAIL, ERROR or XPASS (fuzz: a disagreement was found)
  2  bad input or usage: a malformed fixture or expectations file, an unknown
     implementation, one that cannot start, an unreadable results file

examples:
  kconform run                                    the bundled reference, every fixture
  kconform run --impl my_adapter:adapter          a Python adapter (my_adapter.py here)
  kconform run --impl exec:'./my-broker --stdio'  any program speaking the stdio protocol
  kconform explain seed-03-data-loss-hw-truncation
  kconform fuzz --impl my_adapter:adapter --generation diverging-epoch

docs: README.md, docs/adapters.md, spec/adapter-protocol.md
"""
"""The ``kconform`` epilog: exit codes and examples, under the top-level help and every
command's (the corpus and ITF commands have their own)."""


def command_parser(
    subparsers: Any, name: str, summary: str, description: str, epilog: str = EPILOG
) -> argparse.ArgumentParser:
    """A command's parser on ``kconform``'s sub-command parsers: its one-line ``summary`` in
    the command list, its ``description`` and ``epilog`` under its own ``--help``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name, help=summary, description=description, epilog=epilog, formatter_class=Formatter
    )
    return parser


def guarded(
    command: Callable[[argparse.Namespace], int], errors: Callable[[], tuple[type[Exception], ...]]
) -> Callable[[argparse.Namespace], int]:
    """``command`` with the errors a user can fix (the types ``errors()`` names, imported
    only when one is raised, so registering a command imports nothing heavy) turned into
    one line on stderr and exit code 2."""

    def run(args: argparse.Namespace) -> int:
        try:
            return int(command(args))
        except Exception as exc:
            if isinstance(exc, errors()):
                print(f"kconform: {exc}", file=sys.stderr)
                return 2
            raise

    run.__doc__ = command.__doc__
    return run


def known_differences(paths: list[Path], impl: str, adapter: Any) -> dict[str, str]:
    """The known differences the expectations files give ``impl`` (by its ``--impl`` name or
    the name it reports): field path or property glob -> reason (``expectations.py``)."""
    from ..judging.expectations import load_expectations

    expectations, problems = load_expectations(paths)
    if problems:
        fail("invalid expectations:\n" + "\n".join(str(p) for p in problems))
    names = [impl]
    with contextlib.suppress(AdapterError):
        names.append(adapter.describe().name)
    return expectations.known(tuple(names))


def add_timeouts(p: argparse.ArgumentParser) -> None:
    """``--timeout`` (each reply) and ``--start-timeout`` (hello) for exec: implementations."""
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"exec: implementations: how long to wait for each reply (default: {DEFAULT_TIMEOUT_S:g})",
    )
    p.add_argument(
        "--start-timeout",
        type=float,
        default=DEFAULT_START_TIMEOUT_S,
        metavar="SECONDS",
        help="exec: implementations: how long a new process may take to answer hello "
        f"(default: {DEFAULT_START_TIMEOUT_S:g})",
    )


def add_report_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rules", action="store_true", help="terminal: add the rule view (failures per spec rule)")
    p.add_argument("--matrix", action="store_true", help="terminal: add the fixture x implementation matrix")
    p.add_argument("--all-failures", action="store_true", help="terminal: every failure (default: the first 10)")
    p.add_argument(
        "--color",
        choices=["auto", "always", "never"],
        default="auto",
        help="terminal: colour the statuses (default: auto = on a terminal, unless NO_COLOR is set)",
    )
