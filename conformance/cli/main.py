"""The ``kconform`` command: the parser assembled from one module per command, and the
dispatch.

Exit codes: 0 every result as expected; 1 some result unexpected (FAIL, ERROR, XPASS);
2 bad input or usage (a malformed fixture, an unknown implementation, an implementation
that cannot start, an unreadable results file), always with one message that says what
to fix. Output piped into ``head`` stops quietly. Heavy modules (tabulate, jsonschema,
hypothesis) are imported by the commands that need them, so ``--help`` is instant.

Each command module owns its ``cmd_*`` functions and its parser (``register(sub)``);
what they share is public in ``common.py``. Only this module imports the command modules.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import diff, explore, fuzz, inspection, report, run, sensitivity
from .common import EPILOG, Formatter, UsageError


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``kconform`` parser. With ``command`` naming a command registered at once, the
    corpus commands (``generate``, ``replay``: ``conformance/cli/corpus.py``, whose imports
    of process pools and corpus readers and writers took a quarter of a ``kconform run``;
    and ``itf``) are left out: nothing that parses or prints that command's arguments
    shows them. With None (``--help``), a mistyped command or one of those, every command
    is registered."""
    from reference_impl import __version__

    parser = argparse.ArgumentParser(
        prog="kconform",
        description="Check implementations of Kafka partition replication against an executable spec.",
        epilog=EPILOG,
        formatter_class=Formatter,
    )
    parser.add_argument("--version", action="version", version=f"kconform {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run.register(sub)
    inspection.register(sub)  # list, validate, explain, impls
    report.register(sub)
    fuzz.register(sub)
    explore.register(sub)
    sensitivity.register(sub)
    diff.register(sub)
    if command is None or command not in sub.choices:
        from . import corpus, itf  # generate, replay (corpora at scale); itf

        corpus.register(sub)
        itf.register(sub)
    return parser


def _command_named(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first argument, unless that is an option (the
    top-level options, ``--help`` and ``--version``, take no value)."""
    return argv[0] if argv and not argv[0].startswith("-") else None


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command_named(arguments))
    args = parser.parse_args(arguments)
    try:
        return int(args.func(args))
    except UsageError as exc:
        print(f"kconform: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kconform: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # a reader went away before emit ran (e.g. in a progress line)
        return 0


if __name__ == "__main__":
    sys.exit(main())
