"""Corpus generation and replay throughput: inline vs a process pool vs Spark, by corpus size.

For each size, one corpus is generated (``kconform generate --seed 1``; its rate is
measured) and replayed on ``reference`` by each backend, each replay in a fresh process
(``kconform replay``) so start-up, memory and the first Spark job are all included. Peak
memory is the resident set of the whole process tree (the CLI, pool workers, the Spark
JVM and its Python workers), sampled every 0.2 s from /proc.

Reported per run: wall time of the process, the job time (the replay alone, without
Spark's session start and stop), steps/s over the job time, traces/s, peak tree RSS, and
the CPU seconds of the whole tree (steps per CPU second shows each backend's overhead
even when the machine is shared and wall-clock speed-ups are not measurable).
Ratios are taken within one run of this script; the machine is shared, so compare
ratios, not absolute figures across runs.

    .venv/bin/python benchmarks/bench_replay.py --sizes 10000 100000 1000000 --workers 2

Results are appended to ``out/bench-replay/results.jsonl`` and printed as a table.
``--corpus 1000000=out/c1m`` replays a corpus made earlier (its generation measured then)
instead of generating one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")


def tree_usage(root: int) -> tuple[int, float]:
    """Resident bytes and CPU seconds (own and reaped children's) of ``root`` and all its
    descendants."""
    children: dict[int, list[int]] = {}
    usage: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ppid = int(fields[1])
            cpu = sum(int(x) for x in fields[11:15]) / TICK
            usage[int(entry)] = (int(fields[21]) * PAGE, cpu)
            children.setdefault(ppid, []).append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    rss, cpu, stack = 0, 0.0, [root]
    while stack:
        pid = stack.pop()
        r, c = usage.get(pid, (0, 0.0))
        rss, cpu = rss + r, cpu + c
        stack += children.get(pid, [])
    return rss, cpu


def run_measured(argv: list[str], log: Path) -> tuple[float, int, int, float]:
    """Run ``argv``; return (wall seconds, peak tree RSS bytes, exit code, CPU seconds of
    the tree: the largest sum seen, sampled every 0.2 s)."""
    peak, cpu = 0, 0.0
    with log.open("w", encoding="utf-8") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        done = threading.Event()

        def sample() -> None:
            nonlocal peak, cpu
            while not done.is_set():
                rss, used = tree_usage(proc.pid)
                peak, cpu = max(peak, rss), max(cpu, used)
                done.wait(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        code = proc.wait()
        wall = time.perf_counter() - started
        done.set()
        sampler.join()
    return wall, peak, code, cpu


def kconform(*args: str) -> list[str]:
    return [sys.executable, "-m", "conformance.cli.main", *args]


def corpus_for(size: int, root: Path, workers: int, record: list[dict[str, Any]]) -> Path:
    folder = root / f"corpus-{size}"
    manifest = folder / "corpus-manifest.json"
    if manifest.exists() and json.loads(manifest.read_text())["traces"] == size:
        return folder
    argv = kconform(
        "generate", "--traces", str(size), "--seed", "1", "--out", str(folder), "--force",
        "--backend", "processes", "--workers", str(workers), "--no-progress",
    )  # fmt: skip
    wall, peak, code, cpu = run_measured(argv, root / f"generate-{size}.log")
    if code != 0:
        raise SystemExit(f"generate failed: see {root / f'generate-{size}.log'}")
    info = json.loads(manifest.read_text())
    row = {
        "what": "generate",
        "size": size,
        "backend": f"processes[{workers}]",
        "wall_s": round(wall, 2),
        "steps": info["steps"],
        "traces_per_s": round(size / wall),
        "steps_per_s": round(info["steps"] / wall),
        "cpu_s": round(cpu, 1),
        "peak_rss_mb": round(peak / 2**20),
    }
    record.append(row)
    print(json.dumps(row), flush=True)
    return folder


def replay(size: int, corpus: Path, mode: str, root: Path, workers: int, master: str) -> dict[str, Any]:
    out = root / f"replay-{size}-{mode}"
    extra = {"inline": [], "processes": ["--workers", str(workers)], "spark": ["--master", master]}[mode]
    argv = kconform(
        "replay", "--corpus", str(corpus), "--impl", "reference", "--backend", mode, *extra,
        "--out", str(out), "--no-progress", "--format", "json",
    )  # fmt: skip
    wall, peak, code, cpu = run_measured(argv, root / f"replay-{size}-{mode}.log")
    doc = json.loads((out / "results.json").read_text())
    corpus_info = doc["corpus"]
    steps = sum(corpus_info["steps"].values())
    job = corpus_info["job_s"]
    return {
        "what": "replay",
        "size": size,
        "backend": mode if mode != "spark" else f"spark {master}",
        "exit": code,
        "wall_s": round(wall, 2),
        "job_s": round(job, 2),
        "steps": steps,
        "steps_per_s": round(steps / job),
        "traces_per_s": round(corpus_info["results_total"] / job),
        "unexpected": corpus_info["unexpected"],
        "cpu_s": round(cpu, 1),
        "steps_per_cpu_s": round(steps / cpu) if cpu else None,
        "peak_rss_mb": round(peak / 2**20),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--modes", nargs="+", default=["inline", "spark", "processes"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--out", type=Path, default=Path("out/bench-replay"))
    parser.add_argument(
        "--corpus",
        action="append",
        default=[],
        metavar="SIZE=PATH",
        help="replay this existing corpus for SIZE instead of generating one (e.g. a 1M corpus made earlier)",
    )
    parser.add_argument("--smoke", action="store_true", help="50 traces, inline, a temporary --out: seconds")
    args = parser.parse_args()
    if args.smoke:
        args.sizes, args.modes, args.workers = [50], ["inline"], 1
        args.out = Path(tempfile.mkdtemp(prefix="kconform-bench-replay-"))
    given = {int(size): Path(path) for size, path in (item.split("=", 1) for item in args.corpus)}
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    with (args.out / "results.jsonl").open("a", encoding="utf-8") as log:
        for size in args.sizes:
            corpus = given[size] if size in given else corpus_for(size, args.out, args.workers, rows)
            for mode in args.modes:
                row = replay(size, corpus, mode, args.out, args.workers, args.master)
                rows.append(row)
                print(json.dumps(row), flush=True)
                log.write(json.dumps(row) + "\n")
                log.flush()
    print()
    inline = {r["size"]: r for r in rows if r.get("backend") == "inline"}
    for r in rows:
        base = inline.get(r["size"])
        ratio = f"{r['steps_per_s'] / base['steps_per_s']:.2f}x inline" if base and r["what"] == "replay" else ""
        print(
            f"{r['what']:8} {r['size']:>8} {r['backend']:18} wall {r['wall_s']:>8.1f} s "
            f"job {r.get('job_s', r['wall_s']):>8.1f} s  {r['steps_per_s']:>7} steps/s  "
            f"cpu {r['cpu_s']:>8.1f} s  peak {r['peak_rss_mb']:>5} MB  {ratio}"
        )


if __name__ == "__main__":
    main()
