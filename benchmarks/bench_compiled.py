"""What compiling the judging path with mypyc buys: issue 22's route 1, measured.

The speed targets of issue 22 (replay on ``reference`` at 25,000 steps per CPU second,
``kconform run`` within 3x of pure ``apply``) are not met in pure Python; one route
offered was a compiled core. This script measures it without changing the checkout: it
copies the packages to a temporary folder, compiles the judging path there with mypyc
(``MODULES``: the judge's loop, the safety monitor, the comparison, the shape check,
the plan, the runner, reading corpus lines, the in-process adapter and the wire step),
and runs ``bench_judging.py --only replay run`` on the copy and on this checkout, one
after the other, alternating ``--rounds`` times, each in its own process. It prints both
figures and their ratio.

The reference (``reference_impl``) is not compiled: its hand-tuned internals (a draft
that becomes a ``State`` by changing its class, objects made with ``object.__new__``,
``__dict__`` written directly, actions dispatched by their code objects' argument names)
are what mypyc refuses or breaks at import, and the zoo patches its module attributes,
which compiled calls would not see. The figure is therefore what compiling everything
else gives.

    taskset -c 0 .venv/bin/python benchmarks/bench_compiled.py
    .venv/bin/python benchmarks/bench_compiled.py --smoke      # one small module, tiny sizes

Needs mypy (the test extra has it) and a C compiler; without them it exits 3 with the
reason (as ``bench_kafka.py`` does), and its smoke test skips.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("reference_impl", "conformance", "kconform", "benchmarks")
MODULES = (
    "conformance/judging/judge.py",
    "conformance/judging/safety.py",
    "conformance/judging/compare.py",
    "conformance/judging/observation_check.py",
    "conformance/judging/coarsen.py",
    "conformance/judging/runner.py",
    "conformance/corpus/reading.py",
    "conformance/adapters/in_process.py",
    "conformance/adapters/wire.py",
)
SMOKE_MODULES = ("conformance/judging/compare.py",)
CANNOT_RUN_HERE = 3
FIGURES = ("replay steps per CPU s", "run long us/step", "pure long us/step", "run/pure (long)")
"""``bench_judging.py``'s figures shown (its ``run N`` and ``pure N`` at the longer N as ``long``)."""


def missing() -> str | None:
    """Why the compile cannot run here, or None."""
    try:
        import mypyc  # noqa: F401
    except ImportError:
        return "mypyc is not installed (pip install mypy, or the test extra: pip install -e '.[test]')"
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler!r} is not on PATH): mypyc needs one"
    if not Path(sysconfig.get_paths()["include"], "Python.h").exists():
        return "Python's C headers (Python.h) are not installed: mypyc needs them"
    return None


def compiled_copy(into: Path, modules: tuple[str, ...]) -> None:
    """This checkout's packages under ``into``, with ``modules`` compiled in place."""
    for package in PACKAGES:
        shutil.copytree(ROOT / package, into / package, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    for data in ("spec", "fixtures"):
        if (ROOT / data).exists():
            (into / data).symlink_to(ROOT / data)
    done = subprocess.run(
        [sys.executable, "-m", "mypyc", "--strict", *modules], cwd=into, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"mypyc failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    for module in modules:
        if not list((into / module).parent.glob(Path(module).stem + ".*.so")):
            raise SystemExit(f"mypyc left no extension for {module} in {into}")


def figures(root: Path, smoke: bool) -> dict[str, float]:
    """``bench_judging.py --only replay run`` on the checkout at ``root``, in its own process."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    args = [sys.executable, str(root / "benchmarks" / "bench_judging.py"), "--only", "replay", "run"]
    done = subprocess.run(
        [*args, *(["--smoke"] if smoke else ["--repeat", "1"])], cwd=root, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"bench_judging.py failed in {root}:\n{done.stderr[-3000:]}")
    found: dict[str, float] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.strip().rpartition(" ")
        try:
            found[key.strip()] = float(value)
        except ValueError:  # the corpus generator's own line
            continue
    long = max(int(k.split()[1]) for k in found if k.startswith("run ") and k.endswith(" us/step"))
    for kind in ("run", "pure"):
        found[f"{kind} long us/step"] = found[f"{kind} {long} us/step"]
    return {key: found[key] for key in FIGURES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="compile one small module, tiny sizes")
    parser.add_argument("--rounds", type=int, default=3, help="pure and compiled runs, alternating")
    args = parser.parse_args()
    reason = missing()
    if reason is not None:
        print(f"bench_compiled.py cannot run here: {reason}")
        raise SystemExit(CANNOT_RUN_HERE)
    rounds = 1 if args.smoke else args.rounds
    with tempfile.TemporaryDirectory(prefix="kconform-compiled-") as tmp:
        copy = Path(tmp)
        compiled_copy(copy, SMOKE_MODULES if args.smoke else MODULES)
        best: dict[str, dict[str, float]] = {"pure": {}, "compiled": {}}
        for _ in range(rounds):
            for name, root in (("pure", ROOT), ("compiled", copy)):
                for key, value in figures(root, args.smoke).items():
                    better = max if key == "replay steps per CPU s" else min
                    best[name][key] = better(best[name].get(key, value), value)
    print(f"{'figure (best of ' + str(rounds) + ')':32} {'pure':>10} {'compiled':>10} {'compiled/pure':>14}")
    for key in FIGURES:
        pure, compiled = best["pure"].get(key), best["compiled"].get(key)
        if pure is None or compiled is None:
            continue
        print(f"{key:32} {pure:10.2f} {compiled:10.2f} {compiled / pure:14.2f}")


if __name__ == "__main__":
    main()
