"""Does a one-rule breaker fail exactly the traces whose reference run fires its rule?

Reads the per-trace results of a ``kconform replay`` (``OUT/traces/part-*.jsonl``; each
record carries the rules the reference fired on that trace, from the corpus) and crosses
the outcome with "the trace fires RULE":

    .venv/bin/python benchmarks/rule_exactness.py out/replay-zoo FETCH-PARK-1

Prints the four counts (and errored/skipped ones) and up to five trace ids from each cell
that breaks the claim. Exit code 0 when the claim holds (every failure fires the rule and
every trace firing it failed), 1 otherwise.

``--smoke`` (no arguments) makes its own input in seconds: a 30-trace corpus, replayed on
``zoo:timed-out-produce-removes-records``, crossed with PRODUCE-7 (so few traces prove
nothing either way: the exit code is 0 once the counts are printed).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, nargs="?", help="the replay's --out folder")
    parser.add_argument("rule", nargs="*", help="the rule(s) the implementation breaks (a trace fires any of them)")
    parser.add_argument("--smoke", action="store_true", help="make a tiny replay and read it: seconds (tests run it)")
    args = parser.parse_args(argv)
    if args.smoke:
        return smoke()
    if args.out is None or not args.rule:
        parser.error("the replay's --out folder and at least one rule are required (or --smoke)")
    return exactness(args.out, args.rule)


def smoke() -> int:
    """A 30-trace corpus replayed on a one-rule breaker, then read as a real run is."""
    kconform = [sys.executable, "-c", "import sys; from conformance.cli.main import main; sys.exit(main())"]
    with tempfile.TemporaryDirectory(prefix="kconform-rule-exactness-") as tmp:
        corpus, out = Path(tmp) / "corpus", Path(tmp) / "replay"
        for cmd in (
            ["generate", "--traces", "30", "--seed", "1", "--backend", "inline", "--out", str(corpus), "--no-progress"],
            [
                "replay",
                "--corpus",
                str(corpus),
                "--impl",
                "zoo:timed-out-produce-removes-records",
                "--backend",
                "inline",
                "--out",
                str(out),
                "--no-progress",
                "--format",
                "json",
            ],
        ):
            done = subprocess.run([*kconform, *cmd], capture_output=True, text=True)
            if done.returncode not in (0, 1):  # 1: the breaker failed traces, as it should
                print(f"kconform {' '.join(cmd)} exited {done.returncode}:\n{done.stderr}", file=sys.stderr)
                return 2
        code = exactness(out, ["PRODUCE-7"])
    return 0 if code in (0, 1) else code


def exactness(out: Path, rule: list[str]) -> int:
    """Print the counts for the replay in ``out``; 0 when the claim holds, 1 when not, 2 without results."""
    parts = sorted((out / "traces").glob("part-*.jsonl"))
    if not parts:
        print(f"{out}/traces: no part-*.jsonl files (is this a kconform replay --out folder?)", file=sys.stderr)
        return 2
    rules = set(rule)
    cells: Counter[tuple[str, bool]] = Counter()
    odd: dict[tuple[str, bool], list[str]] = {}
    unknown = 0
    for part in parts:
        with part.open(encoding="utf-8") as lines:
            for line in lines:
                record = json.loads(line)
                fired_rules = record.get("rules")
                if fired_rules is None:
                    unknown += 1
                    continue
                fires = bool(rules.intersection(fired_rules))
                cell = (record["outcome"], fires)
                cells[cell] += 1
                if cell in (("failed", False), ("passed", True)) or record["outcome"] not in ("failed", "passed"):
                    odd.setdefault(cell, []).append(record["fixture"])
    total = sum(cells.values()) + unknown
    print(f"{total:,} trace results in {len(parts)} part files; rule(s): {', '.join(sorted(rules))}")
    for (outcome, fires), count in sorted(cells.items()):
        print(f"  {outcome:8s} {'fires' if fires else 'does not fire':14s} {count:>10,}")
    if unknown:
        print(f"  {unknown:,} results without the rules fired (a corpus from another version): not judged")
    for cell, ids in sorted(odd.items()):
        print(f"  {cell[0]} / {'fires' if cell[1] else 'does not fire'}: {', '.join(ids[:5])}")
    holds = not odd and not unknown
    print("exact: every failure fires the rule and every trace firing it failed" if holds else "not exact")
    return 0 if holds else 1


if __name__ == "__main__":
    sys.exit(main())
