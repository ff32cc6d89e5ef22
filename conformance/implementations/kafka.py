"""``--impl kafka``: Apache Kafka's own replication code behind the stdio protocol.

The adapter is a Java program in ``adapters/kafka`` (docs/kafka.md) that runs Kafka's
``Partition`` over a real ``UnifiedLog`` per replica; the version-neutral half of every
Kafka adapter lives once in ``adapters/kafka-common``, so a module builds through the
reactor ``adapters/pom.xml`` with common first (``BUILD_COMMAND``). This module finds the
build and starts it, and says the command when the build is missing, so a user never gets a
bare "java: not found" or a class-path error.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from ..adapters.stdio import StdioAdapter
from .registry import ImplementationUnavailable

ENV_DIR = "KCONFORM_KAFKA_ADAPTER"
"""Overrides where the adapter's Maven project lives (default: ``adapters/kafka`` of this checkout)."""


def build_command(folder: str) -> str:
    """The documented command (from the checkout's root) that builds the adapter module
    ``adapters/<folder>`` and, first, ``adapters/kafka-common`` it depends on."""
    return f"mvn -q -B -f adapters/pom.xml -pl {folder} -am package -DskipTests"


BUILD_COMMAND = build_command("kafka")
MAIN_CLASS = "kconform.kafka.Main"
START_TIMEOUT_S = 120.0
"""A JVM loading Kafka on a loaded two-core machine takes seconds, not milliseconds."""


class KafkaAdapterUnavailable(ImplementationUnavailable):
    """The adapter cannot be started here; the message says what to install or run."""


def adapter_dir() -> Path:
    """The adapter's Maven project (``$KCONFORM_KAFKA_ADAPTER`` or ``adapters/kafka``)."""
    override = os.environ.get(ENV_DIR)
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / "adapters" / "kafka"


def missing_tools() -> list[str]:
    """The tools the build needs that are not on PATH (``java``, ``mvn``)."""
    return [tool for tool in ("java", "mvn") if shutil.which(tool) is None]


def is_built(directory: Path | None = None) -> bool:
    """True when the compiled classes and Kafka's jars are in ``target/``."""
    d = directory or adapter_dir()
    main = d / "target" / "classes" / "kconform" / "kafka" / "Main.class"
    return main.is_file() and (d / "target" / "lib").is_dir()


def build(directory: Path | None = None) -> None:
    """Run the Maven build (the first run downloads Kafka from Maven Central)."""
    maven_package(directory or adapter_dir(), "Kafka", f"set {ENV_DIR} to the adapters/kafka folder", BUILD_COMMAND)


def maven_package(d: Path, describes: str, where_hint: str, build_command: str) -> None:
    """``mvn package`` of one Kafka adapter module (this one or an older line's,
    ``kafka_lines.py``) through the reactor in its parent folder, so ``kafka-common`` builds
    first; an error names what is missing or gives the build's last lines."""
    missing = missing_tools()
    if missing:
        needs = " and ".join(missing)
        raise KafkaAdapterUnavailable(f"building the {describes} adapter needs {needs} on PATH (JDK 17+, Maven 3.8+)")
    if not (d / "pom.xml").is_file():
        raise KafkaAdapterUnavailable(f"no {describes} adapter project at {d} ({where_hint})")
    reactor = d.parent / "pom.xml"
    if not reactor.is_file():
        raise KafkaAdapterUnavailable(
            f"no adapters reactor at {reactor}: the {describes} adapter builds with adapters/kafka-common"
            f" through adapters/pom.xml ({where_hint})"
        )
    done = subprocess.run(
        ["mvn", "-q", "-B", "-f", str(reactor), "-pl", d.name, "-am", "package", "-DskipTests"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
        raise KafkaAdapterUnavailable(f"the {describes} adapter build failed ({build_command}):\n{tail}")


TMPDIR_ENV = "KCONFORM_KAFKA_TMPDIR"
"""Overrides where the adapter puts its brokers' log directories."""

MEMORY_DIR = Path("/dev/shm")


def log_root() -> Path | None:
    """Where the brokers' log directories go: ``$KCONFORM_KAFKA_TMPDIR``, else a memory-backed
    folder when the machine has one (Linux ``/dev/shm``), else the JVM's default.

    Kafka flushes every checkpoint it writes (the HW and leader-epoch files, ``fsync``) and a
    reset creates a log per broker; on a disk that made a reset about 6x and a step about 3x
    slower (benchmarks/bench_kafka.py). Durability is not under test: the adapter does not
    honour ``crash.unflushed_from``, and a crash keeps the files either way.
    """
    override = os.environ.get(TMPDIR_ENV)
    if override:
        return Path(override)
    if MEMORY_DIR.is_dir() and os.access(MEMORY_DIR, os.W_OK):
        return MEMORY_DIR
    return None


def command(directory: Path | None = None) -> list[str]:
    """The command that starts the built adapter."""
    d = directory or adapter_dir()
    classpath = os.pathsep.join([str(d / "target" / "classes"), str(d / "target" / "lib" / "*")])
    root = log_root()
    tmp = [f"-Djava.io.tmpdir={root}"] if root is not None else []
    return ["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", *tmp, "-cp", classpath, MAIN_CLASS]


def kafka() -> StdioAdapter:
    """Apache Kafka 4.x's own Partition and UnifiedLog (diverging-epoch), via adapters/kafka."""
    d = adapter_dir()
    if shutil.which("java") is None:
        raise KafkaAdapterUnavailable("the Kafka adapter needs java (JDK 17+) on PATH")
    if not is_built(d):
        raise KafkaAdapterUnavailable(f"the Kafka adapter is not built: run `{BUILD_COMMAND}` in {d.parents[1]}")
    return StdioAdapter(command(d), start_timeout_s=START_TIMEOUT_S)


if __name__ == "__main__":  # python3 -m conformance.implementations.kafka: build it
    build()
    print(f"built {adapter_dir()}")
