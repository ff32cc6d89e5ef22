"""Run one task function over many tasks: inline, on a process pool, or on Spark.

Generation and replay both cut their work into small picklable tasks (a part file to
write, a split to replay) and a function in the installed package that does one. The
backend only schedules: ``inline`` loops in this process (no start-up cost, easiest to
debug), ``processes`` uses a ``multiprocessing`` pool on this machine (no JVM), ``spark``
runs one Spark task per work task on ``master`` (``local[*]`` by default, or a cluster's
``spark://HOST:PORT``) and merges the partial results with ``reduce`` on Spark.

Progress is reported in work units (traces): each task has a weight; Spark counts
finished weight with an accumulator, which the driver reads while the job runs.

Ctrl-C (``KeyboardInterrupt`` in the driver) stops the work within a second and is
re-raised: pool workers ignore SIGINT themselves (no traceback per worker) and are
terminated, Spark jobs are cancelled. What finished is on disk (each task writes its
own files and renames them when complete); the caller decides what to keep.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .progress import Progress

BACKENDS = ("spark", "processes", "inline")
T = TypeVar("T")
R = TypeVar("R")


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def run_tasks(
    fn: Callable[[T], R],
    tasks: Sequence[T],
    weights: Sequence[int],
    *,
    backend: str,
    reduce: Callable[[R, R], R],
    progress: Progress | None = None,
    workers: int | None = None,
    spark: Any = None,
) -> R:
    """``reduce`` over ``fn(task)`` for every task (in no particular order)."""
    if not tasks:
        raise ValueError("no tasks to run")
    if backend == "inline":
        return _inline(fn, tasks, weights, reduce, progress)
    if backend == "processes":
        return _processes(fn, tasks, weights, reduce, progress, workers or default_workers())
    if backend == "spark":
        if spark is None:
            raise ValueError("the spark backend needs a SparkSession")
        return _spark(fn, tasks, weights, reduce, progress, spark)
    raise ValueError(f"unknown backend {backend!r} (one of: {', '.join(BACKENDS)})")


def _inline(
    fn: Callable[[T], R],
    tasks: Sequence[T],
    weights: Sequence[int],
    reduce: Callable[[R, R], R],
    progress: Progress | None,
) -> R:
    total: R | None = None
    done = 0
    for task, weight in zip(tasks, weights, strict=True):
        result = fn(task)
        total = result if total is None else reduce(total, result)
        done += weight
        if progress is not None:
            progress.update(done)
    assert total is not None
    return total


def _ignore_sigint() -> None:
    """Pool workers leave Ctrl-C to the driver, which terminates them."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _call(args: tuple[Callable[[Any], Any], Any, int]) -> tuple[Any, int]:
    fn, task, weight = args
    return fn(task), weight


def _processes(
    fn: Callable[[T], R],
    tasks: Sequence[T],
    weights: Sequence[int],
    reduce: Callable[[R, R], R],
    progress: Progress | None,
    workers: int,
) -> R:
    total: R | None = None
    done = 0
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    with context.Pool(workers, initializer=_ignore_sigint, maxtasksperchild=None) as pool:
        jobs = [(fn, task, weight) for task, weight in zip(tasks, weights, strict=True)]
        try:
            for result, weight in pool.imap_unordered(_call, jobs, chunksize=1):
                total = result if total is None else reduce(total, result)
                done += weight
                if progress is not None:
                    progress.update(done)
        except KeyboardInterrupt:
            pool.terminate()  # the workers stop now; their unfinished files are the caller's to clean
            pool.join()
            raise
    assert total is not None
    return total


def _spark(
    fn: Callable[[T], R],
    tasks: Sequence[T],
    weights: Sequence[int],
    reduce: Callable[[R, R], R],
    progress: Progress | None,
    spark: Any,
) -> R:
    sc = spark.sparkContext
    finished = sc.accumulator(0)

    def run_one(item: tuple[T, int]) -> R:
        task, weight = item
        result = fn(task)
        finished.add(weight)
        return result

    rdd = sc.parallelize(list(zip(tasks, weights, strict=True)), len(tasks)).map(run_one)
    outcome: dict[str, Any] = {}

    def job() -> None:
        try:
            outcome["value"] = rdd.reduce(reduce)
        except BaseException as exc:  # re-raised in the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=job, name="kconform-spark-job", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.5)
            if progress is not None:
                progress.update(finished.value)
    except KeyboardInterrupt:
        with contextlib.suppress(Exception):
            sc.cancelAllJobs()
        raise
    if "error" in outcome:
        raise outcome["error"]
    if progress is not None:
        progress.update(finished.value, force=False)
    return outcome["value"]  # type: ignore[no-any-return]
