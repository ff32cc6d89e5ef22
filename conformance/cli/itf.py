"""``kconform itf export | import | check``: traces to and from ITF files (``itf.py``).

``export`` writes one ``.itf.json`` file per trace of any corpus path (fixture files,
witnesses, corpus files); ``import`` writes ITF traces as one corpus ``.jsonl`` file
(``replay`` also reads ``.itf.json`` files directly); ``check`` validates files against
ADR-015 and kconform's mapping. Bad input is one ``file: where: what`` line, exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .common import Formatter, command_parser, guarded

EPILOG = """\
exit codes:
  0  done (check: every file is a valid ITF trace kconform can replay)
  2  bad input: a missing path, a file that is not a trace, an existing --out without --force

examples:
  kconform itf export fixtures/seeds/01-normal-round.yaml --out out/itf
  kconform itf export out/corpus --id s1-42 --out out/itf
  kconform itf import model-checker-traces/ --out out/itf-corpus.jsonl
  kconform replay --corpus out/itf --impl reference --backend inline

docs: docs/itf.md
"""


class ItfCommandError(Exception):
    """One line on stderr, exit code 2."""


def register(sub: Any) -> None:
    """Register ``itf`` and its three sub-commands."""
    itf = command_parser(
        sub,
        "itf",
        "export traces as ITF (Apalache/Quint trace format) files, import ITF traces as a corpus",
        "ITF, the Informal Trace Format of Apalache and Quint (ADR-015): kconform's state mapped to "
        "ITF variables as docs/itf.md describes.",
        EPILOG,
    )
    verbs = itf.add_subparsers(
        dest="itf_command", metavar="{export,import,check}", required=True, help="what to do (each has --help)"
    )
    common: dict[str, Any] = {"epilog": EPILOG, "formatter_class": Formatter}
    exp = verbs.add_parser("export", help="one .itf.json file per trace of fixture, witness or corpus files", **common)
    exp.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="fixture file or folder, corpus file")
    exp.add_argument("--out", type=Path, required=True, help="folder for the .itf.json files")
    exp.add_argument("--id", action="append", default=[], metavar="ID", help="only this trace id (repeatable)")
    exp.set_defaults(func=guarded(cmd_export, _errors))
    imp = verbs.add_parser("import", help="ITF traces as one corpus .jsonl file", **common)
    imp.add_argument("paths", nargs="+", type=Path, metavar="PATH", help=".itf.json file or folder")
    imp.add_argument("--out", type=Path, required=True, help="the corpus file to write (*.jsonl)")
    imp.add_argument("--force", action="store_true", help="replace an existing --out")
    imp.set_defaults(func=guarded(cmd_import, _errors))
    chk = verbs.add_parser("check", help="validate ITF files (ADR-015 and kconform's mapping)", **common)
    chk.add_argument("paths", nargs="+", type=Path, metavar="PATH", help=".itf.json file or folder")
    chk.set_defaults(func=guarded(cmd_check, _errors))


def _errors() -> tuple[type[Exception], ...]:
    """What ``itf``'s sub-commands report as bad input (exit 2)."""
    from ..corpus.itf import ItfError
    from ..corpus.reading import CorpusError

    return (ItfCommandError, ItfError, CorpusError)


def _itf_files(paths: list[Path]) -> list[Path]:
    from ..corpus.itf import SUFFIX

    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = sorted(q for q in p.rglob(f"*{SUFFIX}") if q.is_file())
            if not found:
                raise ItfCommandError(f"{p}: no ITF files (*{SUFFIX}) in this folder")
            out += found
        elif p.is_file():
            out.append(p)
        else:
            raise ItfCommandError(f"{p}: no such file or folder")
    return out


def cmd_export(args: argparse.Namespace) -> int:
    """Write one ITF file per trace."""
    from ..corpus.itf import dumps, file_name, fixture_to_itf
    from ..corpus.reading import iter_fixtures

    wanted = set(args.id)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    written = 0
    for fixture in iter_fixtures(list(args.paths)):
        if wanted and fixture.id not in wanted and fixture.base_id not in wanted:
            continue
        try:
            trace = fixture_to_itf(fixture)
        except ValueError as exc:
            raise ItfCommandError(f"{fixture.path}: {fixture.id}: {exc}") from None
        (out / file_name(fixture.id)).write_text(dumps(trace), encoding="utf-8")
        written += 1
    if not written:
        raise ItfCommandError(f"no trace {' or '.join(sorted(wanted))} in {' '.join(map(str, args.paths))}")
    print(f"wrote {written} ITF trace{'s' if written != 1 else ''} under {out}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    """Write ITF traces as corpus lines, each checked as replay would read it."""
    from ..corpus.format import CorpusLineError, dumps, record_to_trace
    from ..corpus.itf import read_itf

    out: Path = args.out
    if not out.name.endswith(".jsonl"):
        raise ItfCommandError(f"--out {out}: a corpus file is named *.jsonl")
    if out.exists() and not args.force:
        raise ItfCommandError(f"{out} exists: choose another --out or pass --force to replace it")
    lines = []
    for path in _itf_files(list(args.paths)):
        record = read_itf(path)
        try:
            record_to_trace(record, str(path), 1)
        except CorpusLineError as exc:
            raise ItfCommandError(f"{path}: {exc.field}: {exc.message}") from None
        lines.append(dumps(record))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} corpus line{'s' if len(lines) != 1 else ''} to {out}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Validate every file; report each problem as ``file: where: what``."""
    from ..corpus.format import CorpusLineError
    from ..corpus.itf import problems
    from ..corpus.reading import read_itf_trace

    bad = 0
    files = _itf_files(list(args.paths))
    for path in files:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(f"{path}: not a JSON file: {exc}", file=sys.stderr)
            bad += 1
            continue
        found = problems(data)
        item = read_itf_trace(str(path)) if not found else None
        if isinstance(item, CorpusLineError):
            found = [f"{item.field}: {item.message}"]
        for problem in found:
            print(f"{path}: {problem}", file=sys.stderr)
        bad += bool(found)
    print(f"{len(files) - bad} of {len(files)} ITF file{'s' if len(files) != 1 else ''} valid")
    return 2 if bad else 0
