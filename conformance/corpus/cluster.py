"""A Spark standalone cluster (one master, one worker) on 127.0.0.1, from the pyspark install.

The pyspark wheel ships ``bin/spark-class`` but not the ``sbin/start-*.sh`` scripts, so
the master and the worker are started as ``spark-class`` processes directly (it ``exec``s
java, so the process is the JVM). Everything binds to 127.0.0.1, the REST submission port
is off, the web UIs take free ports, the worker writes under a scratch folder.

    python -m conformance.corpus.cluster --cores 2 --memory 2g

prints the master URL (``spark://127.0.0.1:7077`` by default) and runs until Ctrl-C; then
``kconform replay --master spark://127.0.0.1:7077 ...`` uses it. Tests start one on free
ports with ``LocalCluster`` and stop it afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from types import TracebackType

from .spark import SparkSetupError, check_java


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spark_home() -> Path:
    try:
        import pyspark
    except ImportError:
        raise SparkSetupError("pyspark is not installed; pip install pyspark") from None
    return Path(pyspark.__file__).resolve().parent


class LocalCluster:
    """Master and worker JVMs on 127.0.0.1; ``start()`` waits until the worker registered."""

    def __init__(
        self,
        port: int | None = None,
        cores: int = 2,
        memory: str = "2g",
        work_dir: Path | None = None,
        timeout_s: float = 90.0,
    ) -> None:
        self.port = port or free_port()
        self.ui_port = free_port()
        self.worker_ui_port = free_port()
        self.cores, self.memory, self.timeout_s = cores, memory, timeout_s
        self.work_dir = work_dir or Path(tempfile.mkdtemp(prefix="kconform-spark-"))
        self.master: subprocess.Popen[bytes] | None = None
        self.worker: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _env(self) -> dict[str, str]:
        return {
            **os.environ,
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
            "SPARK_LOG_DIR": str(self.work_dir / "logs"),
        }

    def _spawn(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        log = (self.work_dir / f"{name}.log").open("wb")
        spark_class = spark_home() / "bin" / "spark-class"
        return subprocess.Popen(
            [str(spark_class), *args], stdout=log, stderr=subprocess.STDOUT, env=self._env(), start_new_session=True
        )

    def start(self) -> LocalCluster:
        check_java()
        self.master = self._spawn(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.ui_port),
        )  # fmt: skip
        self.worker = self._spawn(
            "worker",
            "org.apache.spark.deploy.worker.Worker",
            self.url,
            "--host", "127.0.0.1", "--cores", str(self.cores), "--memory", self.memory,
            "--webui-port", str(self.worker_ui_port), "--work-dir", str(self.work_dir / "work"),
        )  # fmt: skip
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            for name, proc in (("master", self.master), ("worker", self.worker)):
                if proc.poll() is not None:
                    self.stop()
                    raise SparkSetupError(f"the Spark {name} exited: see {self.work_dir / (name + '.log')}")
            if self.alive_workers() >= 1:
                return self
            time.sleep(0.5)
        self.stop()
        raise SparkSetupError(f"no worker registered with {self.url} in {self.timeout_s:.0f} s: see {self.work_dir}")

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as reply:
                return int(json.load(reply).get("aliveworkers", 0))
        except (OSError, ValueError):
            return 0

    def stop(self) -> None:
        """Worker first (it ends its executors), then the master; each gets 20 s."""
        for proc in (self.worker, self.master):
            if proc is None or proc.poll() is not None:
                continue
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run a Spark master and worker on 127.0.0.1 until Ctrl-C.")
    parser.add_argument("--port", type=int, default=7077)
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--memory", default="2g", help="worker memory for executors (default 2g)")
    parser.add_argument("--work-dir", type=Path, help="worker scratch and logs (default: a temporary folder)")
    args = parser.parse_args(argv)
    cluster = LocalCluster(args.port, args.cores, args.memory, args.work_dir)
    try:
        cluster.start()
    except SparkSetupError as exc:
        print(f"kconform: {exc}", file=sys.stderr)
        return 2
    print(f"Spark master {cluster.url} with one worker ({args.cores} cores, {args.memory}); logs in {cluster.work_dir}")
    print(f"use: kconform replay --master {cluster.url} ...   (Ctrl-C stops the cluster)", flush=True)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
