"""Sort a Kafka replay's failing traces into the classes docs/kafka.md names.

``kconform replay`` groups failures by their first difference (``judging.signature``); this
script adds what only a reading of Kafka can: whether a failure is one of the known "no Kafka
counterpart" classes of spec Simplification 1 (records, not batches). Kafka fetches whole
batches (``replica.fetch.max.bytes`` never splits one, and a first batch larger than it is
sent whole: ``minOneMessage``), while a kconform fetch's ``max_records`` may end inside a
batch a produce wrote. So:

- **A (refused)**: the adapter refuses such a fetch (FETCH-LEADER-3, "ends inside a batch");
- **B (whole batch)**: a fetch the reference answered with part of a batch (a parked one,
  answered later, or a partial ``max_records`` answer) was answered by Kafka with the whole
  batch, or stopped before it; the trace differs from that step on, at or before its first
  difference;
- **other**: everything else, by signature, each to be read and settled.

A batch is what one ``produce`` step wrote: the generator names its records ``vK``,
``vK.1``, ``vK.2`` (given records ``iN`` are one record per batch, as the adapters write
them). Usage::

    python adapters/kafka/replay_classes.py --replay OUT --corpus CORPUS [--impl kafka]
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from conformance.corpus.format import parse_line
from conformance.corpus.reading import corpus_files
from conformance.judging.signature import failure_signature

REFUSED = "ends inside a batch"


def batch_of(record: str) -> str:
    """The produce a record came from: ``v7.2@1`` -> ``v7``."""
    return record.split("@", 1)[0].split(".", 1)[0]


def cuts_a_batch(observation: dict[str, Any]) -> bool:
    """Whether a fetch answer in ``observation`` ends inside a batch of its leader's log."""
    replicas = observation.get("replicas") or {}
    for answer in ((observation.get("answers") or {}).get("fetch") or {}).values():
        if not answer or not answer.get("records"):
            continue
        leader = replicas.get(answer.get("from")) or {}
        log, start = leader.get("log") or [], leader.get("log_start") or 0
        nxt = answer["fetch_offset"] + len(answer["records"]) - start
        if 0 <= nxt < len(log) and batch_of(log[nxt]) == batch_of(answer["records"][-1]):
            return True
    return False


def classify(result: dict[str, Any], steps: list[Any], replicas: list[str]) -> str:
    """The class of one failing result (``steps``: its trace's fixture steps)."""
    first = result.get("divergence") or {}
    if REFUSED in str(first.get("actual", "")):
        return "A: refused, max_records ends inside a batch"
    upto = int(first.get("step") or len(steps))
    if any(s.expect and cuts_a_batch(s.expect) for s in steps[:upto]):
        return "B: after an answer that ends inside a batch (Kafka: whole batches)"
    return "other: " + failure_signature(result, replicas)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--replay", type=Path, required=True, help="the replay's --out folder")
    p.add_argument("--corpus", type=Path, required=True, help="the corpus it replayed")
    p.add_argument("--impl", default="kafka", help="implementation id (default: kafka)")
    p.add_argument("--examples", type=int, default=3, help="trace ids shown per class (default: 3)")
    args = p.parse_args(argv)
    failing: dict[str, dict[str, Any]] = {}
    for name in sorted(glob.glob(str(args.replay / "traces" / "part-*.jsonl"))):
        with open(name, encoding="utf-8") as results:
            for line in results:
                r = json.loads(line)
                if r["implementation"] == args.impl and r["outcome"] in ("failed", "errored"):
                    failing[r["fixture"]] = r
    classes: Counter[str] = Counter()
    examples: dict[str, list[str]] = defaultdict(list)
    seen = 0
    for path in corpus_files([args.corpus]):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as lines:
            for number, text in enumerate(lines, 1):
                if not text.strip() or json.loads(text).get("id") not in failing:
                    continue
                trace = parse_line(text, str(path), number)
                result = failing[trace.fixture.id]
                kind = classify(result, list(trace.fixture.steps), list(trace.fixture.config.replicas))
                classes[kind] += 1
                seen += 1
                if len(examples[kind]) < args.examples:
                    examples[kind].append(trace.fixture.id)
    for kind, n in classes.most_common():
        print(f"{n:7d}  {kind}  (e.g. {', '.join(examples[kind])})")
    print(f"{seen:7d}  failing or errored traces of {args.impl} ({len(failing)} in the results)")
    return 0 if seen == len(failing) else 1


if __name__ == "__main__":
    sys.exit(main())
