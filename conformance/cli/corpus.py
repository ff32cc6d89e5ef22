"""``kconform generate`` and ``kconform replay``: argument parsing and the two commands.

``register(sub)`` registers both on the main parser (``conformance/cli/main.py``). Each
command returns an exit code and reports bad input itself, as one line on stderr with
exit code 2; Spark is imported only when the spark backend is chosen.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import reference_impl
from reference_impl import Generation

from .. import reports
from ..adapters.base import AdapterError
from ..corpus.aggregate import FIRST_FAILURES, Aggregate, document, merge, outcome_totals, unexpected
from ..corpus.backends import BACKENDS, run_tasks
from ..corpus.generate import (
    DEFAULT_MIX,
    GenerateError,
    PartTask,
    finished_part,
    parse_mix,
    reference_revision,
    write_part,
)
from ..corpus.generate import (
    part_name as part_file,
)
from ..corpus.progress import COUNT_SUFFIX, PartsWatcher, Progress, ResultsWatcher
from ..corpus.reading import (
    MANIFEST,
    SPLIT_LINES,
    CorpusError,
    Split,
    corpus_files,
    count_lines,
    manifest,
    manifest_revisions,
    plan_splits,
)
from ..corpus.replay import TMP, ReplayTask, done_name, import_roots, part_name, replay_split
from ..implementations.registry import UnknownImplementation, resolve
from ..judging.expectations import load_expectations
from ..judging.levels import LEVELS
from ..reports.results import write_document
from .common import add_report_options, add_timeouts, command_parser, guarded, plural, terminal_options

EPILOG = """\
exit codes:
  0  done; for replay: every result as expected
  1  replay: some result unexpected (FAIL, ERROR or XPASS)
  2  bad input or set-up: a missing corpus path, an unknown implementation or one that
     cannot start, an existing --out (generate), no Java for Spark

examples:
  kconform generate --traces 100000 --seed 1                   out/corpus, gzipped parts
  kconform replay --corpus out/corpus --impl reference         Spark local[*]
  kconform replay --corpus out/corpus --impl my_adapter:adapter --backend processes
  kconform replay --corpus fixtures --impl exec:'./my-broker --stdio' --master spark://127.0.0.1:7077
  kconform replay --corpus out/corpus --impl my_adapter:adapter --rerun out/replay --save-failures out/shrunk
  kconform generate --traces 10000 --record-from my_adapter:adapter --out out/recorded

docs: docs/replay.md
"""

DEFAULT_CORPUS = Path("out/corpus")
DEFAULT_OUT = Path("out/replay")
PART_TRACES = 5000


class CommandError(Exception):
    """Bad input or a setup problem: one line on stderr, exit code 2."""


def _backend_options(p: argparse.ArgumentParser, default_backend: str) -> None:
    p.add_argument(
        "--backend",
        choices=BACKENDS,
        default=default_backend,
        help=f"where the work runs (default: {default_backend})",
    )
    p.add_argument(
        "--master",
        default="local[*]",
        help="Spark master: local[N] or spark://HOST:PORT (spark backend; default: local[*])",
    )
    p.add_argument("--workers", type=int, help="processes backend: pool size (default: the cores available)")
    p.add_argument("--no-progress", action="store_true", help="no progress line")


def register(sub: Any) -> None:
    """Register ``generate`` and ``replay`` on the ``kconform`` sub-command parser."""
    gen = command_parser(
        sub,
        "generate",
        "write a corpus of seeded random traces (JSON Lines, gzipped parts)",
        "Seeded random walks over the reference's enabled steps, every expected observation recorded; "
        "trace N of a seed is the same however the corpus is made.",
        EPILOG,
    )
    gen.add_argument("--traces", type=int, required=True, help="how many traces")
    gen.add_argument("--seed", type=int, default=1, help="the corpus seed (default: 1)")
    gen.add_argument(
        "--generation",
        action="append",
        choices=[g.value for g in Generation],
        help="draw configs of this generation only (repeatable; default: every generation), "
        "e.g. for an implementation that runs one (Kafka 4.x: diverging-epoch)",
    )
    gen.add_argument(
        "--start", type=int, default=0, help="index of the first trace, to regenerate any trace alone (default: 0)"
    )
    gen.add_argument("--out", type=Path, default=DEFAULT_CORPUS, help=f"corpus folder (default: {DEFAULT_CORPUS})")
    gen.add_argument(
        "--shape",
        action="append",
        default=[],
        metavar="NAME=WEIGHT",
        help="weight of a trace shape (repeatable; default: "
        + ", ".join(f"{n}={w:g}" for n, w in DEFAULT_MIX.items())
        + ")",
    )
    gen.add_argument("--record-from", metavar="SPEC", help="record this implementation's observations instead")
    gen.add_argument(
        "--part-traces", type=int, default=PART_TRACES, help=f"traces per part file (default: {PART_TRACES})"
    )
    gen.add_argument("--no-gzip", action="store_true", help="plain .jsonl parts")
    gen.add_argument("--force", action="store_true", help="replace an existing corpus in --out")
    add_timeouts(gen)
    _backend_options(gen, "processes")
    gen.set_defaults(func=guarded(cmd_generate, _errors))

    rep = command_parser(
        sub,
        "replay",
        "replay a corpus against implementations (Spark, a process pool or inline)",
        "Replay every trace of a corpus on each implementation: one result per trace and "
        "implementation (OUT/traces/part-*.jsonl), the results document (OUT/results.json) and the report.",
        EPILOG,
    )
    rep.add_argument(
        "--corpus",
        action="append",
        type=Path,
        required=True,
        metavar="PATH",
        help="corpus file or folder: *.jsonl, *.jsonl.gz, YAML fixtures (repeatable)",
    )
    rep.add_argument("--impl", action="append", required=True, metavar="SPEC", help="implementation (repeatable)")
    rep.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default: {DEFAULT_OUT})")
    rep.add_argument(
        "--rerun",
        type=Path,
        metavar="OUT",
        help="replay only the traces that failed or errored in an earlier replay's output folder",
    )
    rep.add_argument("--save-failures", type=Path, metavar="DIR", help="write failing traces, shrunk, as YAML fixtures")
    rep.add_argument("--save-limit", type=int, default=20, help="at most this many saved fixtures (default: 20)")
    rep.add_argument(
        "--first-failures",
        type=int,
        default=FIRST_FAILURES,
        help=f"failures kept in the report, in corpus order (default: {FIRST_FAILURES})",
    )
    rep.add_argument(
        "--level",
        choices=LEVELS,
        default="exact",
        help="the level each trace's outcome is judged at, as in run (default: exact; see docs/levels.md)",
    )
    rep.add_argument(
        "--expectations",
        action="append",
        type=Path,
        metavar="FILE",
        help="expectations file, as in run: trace ids expected to fail (XFAIL), known differences (repeatable)",
    )
    rep.add_argument(
        "--check-progress",
        action="store_true",
        help="end each trace with a fair suffix and check the PROGRESS-* properties (spec: Progress)",
    )
    rep.add_argument("--format", choices=reports.FORMATS, default="terminal", help="what to print (default: terminal)")
    add_report_options(rep)
    add_timeouts(rep)
    rep.add_argument(
        "--split-traces", type=int, default=SPLIT_LINES, help=f"traces per task at most (default: {SPLIT_LINES})"
    )
    _backend_options(rep, "spark")
    rep.set_defaults(func=guarded(cmd_replay, _errors))


def _errors() -> tuple[type[Exception], ...]:
    """What ``generate`` and ``replay`` report as bad input (exit 2)."""
    from ..corpus.spark import SparkSetupError

    return (CommandError, CorpusError, GenerateError, SparkSetupError)


@contextmanager
def _engine(args: argparse.Namespace, app: str) -> Iterator[Any]:
    """A Spark session for the spark backend (stopped afterwards), else None."""
    if args.backend != "spark":
        yield None
        return
    from ..corpus.spark import session

    spark = session(args.master, app=app)
    try:
        yield spark
    finally:
        spark.stop()


def _check_impl(spec: str, timeout_s: float, start_timeout_s: float) -> None:
    """Start the implementation once on the driver: a bad name or a program that does not
    start is reported before any work is scheduled."""
    try:
        adapter = resolve(spec, timeout_s=timeout_s, start_timeout_s=start_timeout_s)
    except UnknownImplementation as exc:
        raise CommandError(str(exc)) from None
    try:
        adapter.describe()
    except AdapterError as exc:
        detail = f"\n{exc.detail}" if exc.detail else ""
        raise CommandError(f"implementation {spec!r} cannot start: {exc.message}{detail}") from None
    finally:
        adapter.close()


# --- generate ------------------------------------------------------------------------------


def cmd_generate(args: argparse.Namespace) -> int:
    """Write ``--traces`` traces as part files plus a manifest."""
    if args.traces < 1 or args.start < 0 or args.part_traces < 1:
        raise CommandError("--traces and --part-traces must be positive, --start not negative")
    mix = parse_mix(args.shape)
    if args.record_from:
        _check_impl(args.record_from, args.timeout, args.start_timeout)
    out: Path = args.out
    if out.exists() and any(out.iterdir()):
        if not args.force:
            raise CommandError(f"{out} is not empty: choose another --out or pass --force to replace it")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    compress = not args.no_gzip
    tasks = []
    for part, first in enumerate(range(args.start, args.start + args.traces, args.part_traces)):
        count = min(args.part_traces, args.start + args.traces - first)
        tasks.append(
            PartTask(
                str(out.resolve()),
                part,
                args.seed,
                first,
                count,
                tuple(mix.items()),
                args.record_from,
                args.timeout,
                compress,
                import_roots(),
                args.start_timeout,
                tuple(args.generation or ()),
            )
        )
    progress = Progress(args.traces, "traces", sys.stderr, enabled=not args.no_progress)
    started = time.perf_counter()
    interrupted = False
    counts = {part_file(t.part, t.compress): t.count for t in tasks}
    try:
        with _engine(args, "kconform generate") as spark, PartsWatcher(out, progress, counts):
            progress.started = time.perf_counter()  # the rate and ETA of the work, not of start-up
            parts = run_tasks(
                write_part,
                tasks,
                [t.count for t in tasks],
                backend=args.backend,
                reduce=lambda a, b: a + b,
                progress=None,  # the watcher counts traces as parts grow
                workers=args.workers,
                spark=spark,
            )
        progress.update(args.traces, force=True)
    except KeyboardInterrupt:
        interrupted = True
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not lose the saving
        _clean_tmp(out)
        parts = [entry for entry in map(finished_part, tasks) if entry is not None]
    progress.close()
    seconds = time.perf_counter() - started
    parts.sort(key=lambda p: p["file"])
    steps = sum(p["steps"] for p in parts)
    stopped = sum(p["recording_stopped"] for p in parts)
    made = sum(p["traces"] for p in parts)
    info = manifest(
        parts,
        generator="kconform generate",
        version=reference_impl.__version__,
        seed=args.seed,
        start=args.start,
        traces=made,
        steps=steps,
        shapes=mix,
        **({"generations": list(args.generation)} if args.generation else {}),
        recorded_from=args.record_from or "reference",
        reference_revision=reference_revision(),
        **({"incomplete": {"traces_asked": args.traces}} if interrupted else {}),
    )
    (out / MANIFEST).write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    if interrupted:
        print(
            f"interrupted (Ctrl-C): {plural(made, 'trace')} of {args.traces} written in "
            f"{plural(len(parts), 'whole part')} under {out} (manifest marked incomplete; unfinished parts removed)",
            file=sys.stderr,
        )
        return 130
    print(
        f"generated {args.traces} traces ({steps} steps, mean {steps / args.traces:.1f}) in {len(parts)} parts "
        f"under {out} in {seconds:.1f} s: {args.traces / seconds:.0f} traces/s, {steps / seconds:.0f} steps/s"
        f" [{args.backend}]"
    )
    if stopped:
        print(f"{stopped} recordings stopped early ({args.record_from} failed to answer): see provenance")
    return 0


# --- replay --------------------------------------------------------------------------------


def rerun_selection(out: Path) -> frozenset[tuple[str, str]]:
    """(implementation, trace id) of every failed or errored result of an earlier replay."""
    folder = out / "traces"
    parts = sorted(folder.glob("part-*.jsonl"))
    if not parts:
        raise CommandError(f"--rerun {out}: no per-trace results ({folder}/part-*.jsonl); give a replay --out folder")
    chosen: set[tuple[str, str]] = set()
    for part in parts:
        with part.open(encoding="utf-8") as f:
            for n, line in enumerate(f, start=1):
                try:
                    record = json.loads(line)
                    if record["outcome"] in ("failed", "errored"):
                        chosen.add((record["implementation"], record["fixture"]))
                except (ValueError, KeyError, TypeError):
                    raise CommandError(f"{part}:{n}: not a kconform result record") from None
    return frozenset(chosen)


RESUME = "resume.json"
"""Written beside ``results.json`` by an interrupted replay: what ``--rerun`` resumes."""


def _plan_key(args: argparse.Namespace, impls: tuple[str, ...], splits: list[Split]) -> dict[str, Any]:
    """What must be the same for a resume to continue a replay: corpus, implementations, cut."""
    return {
        "corpus": [str(p.resolve()) for p in args.corpus],
        "implementations": list(impls),
        "splits": len(splits),
        "lines": count_lines(splits),
    }


def _resume_record(rerun: Path) -> dict[str, Any] | None:
    """The resume record of an interrupted replay in ``rerun``, or None (a finished one)."""
    path = rerun / RESUME
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not isinstance(data["plan"], dict):
            raise TypeError("not a mapping")
        return data
    except (ValueError, KeyError, TypeError, OSError) as exc:
        raise CommandError(f"{path}: not a kconform resume record ({exc}); replay without --rerun") from None


def _finished(traces_dir: Path, splits: int) -> dict[int, Aggregate]:
    """The finished splits in ``traces_dir`` (those with a totals file), by index."""
    out: dict[int, Aggregate] = {}
    for i in range(splits):
        done = done_name(traces_dir / part_name(i))
        if done.exists() and (traces_dir / part_name(i)).exists():
            try:
                out[i] = Aggregate.from_json(json.loads(done.read_text(encoding="utf-8")))
            except (ValueError, KeyError, TypeError) as exc:
                raise CommandError(f"{done}: damaged split totals ({exc}); replay without --rerun") from None
    return out


def _prepare_traces_dir(traces_dir: Path, rerun: Path | None, keep: dict[int, Aggregate]) -> None:
    """A fresh results folder, holding only the finished splits ``keep`` of ``rerun``
    (copied when resuming into another folder); temporary and unfinished files go."""
    source = (rerun / "traces") if rerun is not None else None
    same = source is not None and source.resolve() == traces_dir.resolve()
    if same:
        for f in traces_dir.iterdir():
            index = f.name[5:10]
            if not (f.name.startswith("part-") and index.isdigit() and int(index) in keep) or f.name.endswith(TMP):
                f.unlink()
        return
    if traces_dir.exists():
        shutil.rmtree(traces_dir)
    traces_dir.mkdir(parents=True)
    if source is not None:
        for i in keep:
            for name in (part_name(i), done_name(Path(part_name(i))).name):
                shutil.copyfile(source / name, traces_dir / name)


def _clean_tmp(folder: Path) -> None:
    for f in [*folder.glob(f"*{TMP}"), *folder.glob(f"*{COUNT_SUFFIX}")]:
        with contextlib.suppress(OSError):
            f.unlink()


def cmd_replay(args: argparse.Namespace) -> int:
    """Replay the corpus, write per-trace results and the results document, print the report.

    Ctrl-C stops it within a second: the finished splits' results are kept, the results
    document is written marked incomplete, and ``--rerun OUT`` resumes with the rest."""
    splits = plan_splits(args.corpus, args.split_traces)
    files = corpus_files(args.corpus)
    impls = tuple(dict.fromkeys(args.impl))
    plan = _plan_key(args, impls, splits)
    resume = _resume_record(args.rerun) if args.rerun else None
    kept: dict[int, Aggregate] = {}
    if resume is not None:
        if resume["plan"] != plan:
            raise CommandError(
                f"--rerun {args.rerun}: that replay was interrupted on another corpus, implementations or "
                "--split-traces; give the same ones to resume it, or replay without --rerun"
            )
        only = frozenset((i, t) for i, t in resume["only"]) if resume.get("only") is not None else None
        kept = _finished(args.rerun / "traces", len(splits))
    else:
        only = rerun_selection(args.rerun) if args.rerun else None
        if only is not None and not only:
            print(f"nothing to rerun: no failed or errored trace in {args.rerun}")
            return 0
    for spec in impls:
        _check_impl(spec, args.timeout, args.start_timeout)
    expectations, problems = load_expectations(args.expectations or [])
    if problems:
        raise CommandError("invalid expectations:\n" + "\n".join(str(p) for p in problems))
    current = reference_revision()
    older = {folder: rev for folder, rev in manifest_revisions(files).items() if rev != current}
    for folder, rev in older.items():
        print(
            f"note: {folder} was generated by reference revision {rev}, this kconform's is {current} (the "
            "reference's sources or spec/replication.md changed since): where the model's behaviour changed, "
            "its expectations follow the old one; regenerate it to judge against this one",
            file=sys.stderr,
        )
    out: Path = args.out
    traces_dir = out / "traces"
    _prepare_traces_dir(traces_dir, args.rerun if resume is not None else None, kept)
    if kept:
        print(f"resuming: {len(kept)} of {len(splits)} splits finished earlier are kept", file=sys.stderr)
    tasks = [
        ReplayTask(
            split=split,
            index=i,
            impls=impls,
            timeout_s=args.timeout,
            results_dir=str(traces_dir.resolve()),
            only=only,
            keep=args.first_failures,
            sys_path=import_roots(),
            start_timeout_s=args.start_timeout,
            level=args.level,
            expectations=expectations if args.expectations else None,
            check_progress=args.check_progress,
        )
        for i, split in enumerate(splits)
        if i not in kept
    ]
    todo = [splits[t.index] for t in tasks]
    total = count_lines(todo) * len(impls) if only is None else sum(1 for impl, _ in only if impl in impls)
    progress = Progress(total, "results", sys.stderr, enabled=not args.no_progress)
    started_at = datetime.now(UTC)
    started = time.perf_counter()
    earlier = list(kept.values())
    agg = Aggregate(keep=args.first_failures)
    for part in earlier:
        agg.merge(part)
    interrupted = False
    t_job = time.perf_counter()
    try:
        if tasks:
            with _engine(args, "kconform replay") as spark, ResultsWatcher(traces_dir, progress, skip=kept):
                t_job = time.perf_counter()
                progress.started = time.perf_counter()  # the rate and ETA of the replay, not of start-up
                agg.merge(
                    run_tasks(
                        replay_split,
                        tasks,
                        [s.lines * len(impls) for s in todo],
                        backend=args.backend,
                        reduce=merge,
                        progress=None,  # the watcher counts results as they are written
                        workers=args.workers,
                        spark=spark,
                    )
                )
            progress.update(total, force=True)
    except KeyboardInterrupt:
        interrupted = True
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not lose the saving
        _clean_tmp(traces_dir)
        kept = _finished(traces_dir, len(splits))
        agg = Aggregate(keep=args.first_failures)
        for part in kept.values():
            agg.merge(part)
    job_s = time.perf_counter() - t_job
    progress.close()
    seconds = time.perf_counter() - started
    selection = {
        "corpus": [str(p) for p in args.corpus],
        "implementations": list(impls),
        "backend": args.backend,
        "master": args.master if args.backend == "spark" else None,
        "rerun": str(args.rerun) if args.rerun else None,
        "level": args.level,
        "expectations": [str(p) for p in args.expectations or []],
    }
    corpus = {
        "files": len(files),
        "lines": count_lines(splits),
        "results_dir": str(traces_dir),
        "job_s": job_s,
        "reference_revision": current,
        "generated_by_other_revisions": older,
    }
    if interrupted:
        corpus["incomplete"] = {"splits_finished": len(kept), "splits": len(splits)}
    doc = document(agg, list(impls), started=started_at, duration_s=seconds, selection=selection, corpus=corpus)
    write_document(doc, out / "results.json")
    resume_path = out / RESUME
    if interrupted:
        resume_path.write_text(
            json.dumps({"resume": 1, "plan": plan, "only": sorted(only) if only is not None else None}, indent=1)
            + "\n",
            encoding="utf-8",
        )
    elif resume_path.exists():
        resume_path.unlink()
    sys.stdout.write(reports.render(doc, args.format, **terminal_options(args)))
    steps = sum(agg.steps.values())
    counts = outcome_totals(agg)
    lines = count_lines(splits)
    fresh_results = agg.results - sum(a.results for a in earlier)
    fresh_steps = steps - sum(sum(a.steps.values()) for a in earlier)
    rate = f" ({fresh_results / job_s:.0f} traces/s, {fresh_steps / job_s:.0f} steps/s)" if job_s > 0 else ""
    print(
        f"\n{'interrupted after' if interrupted else 'replayed'} {plural(agg.results, 'result')} "
        f"({plural(lines, 'corpus line')} x {plural(len(impls), 'implementation')}): "
        + ", ".join(f"{counts.get(o, 0)} {o}" for o in ("passed", "failed", "errored", "skipped"))
        + f"; {plural(fresh_steps, 'step')} in {job_s:.1f} s{rate}, {seconds:.1f} s in all"
        + f" [{args.backend}{' ' + args.master if args.backend == 'spark' else ''}]",
        file=sys.stderr,
    )
    if agg.malformed:
        print(f"{agg.malformed} malformed corpus lines (errored, listed with file:line)", file=sys.stderr)
    print(f"results: {out / 'results.json'}  per trace: {traces_dir}/part-*.jsonl", file=sys.stderr)
    if interrupted:
        print(
            f"interrupted (Ctrl-C): {len(kept)} of {len(splits)} splits finished and saved, results marked "
            f"incomplete; resume with the same command and --rerun {out}",
            file=sys.stderr,
        )
        return 130
    if args.save_failures:
        from ..corpus.shrink import save_failures

        saved = save_failures(
            agg,
            args.save_failures,
            args.save_limit,
            args.timeout,
            args.start_timeout,
            args.level,
            expectations if args.expectations else None,
        )
        print(f"saved {len(saved)} shrunk failing fixtures under {args.save_failures}", file=sys.stderr)
    unestablished = [
        f"{impl}: no level met: {met}"
        for impl, met in doc["corpus"]["level_met"].items()
        if met.startswith("safety not established")
    ]
    for line in unestablished:
        print(f"kconform: {line}", file=sys.stderr)
    return 1 if unexpected(agg) or unestablished else 0
