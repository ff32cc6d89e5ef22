"""Older Apache Kafka lines under test: ``--impl kafka-2.6`` and ``--impl kafka-0.10``.

Each line is its own Maven module under ``adapters/`` (docs/kafka.md, "Older Kafka lines"),
because its ``Partition`` and ``Log`` APIs differ from 4.x's. This module does for them what
``kafka_impl`` does for ``adapters/kafka``: find the build, start it, and say the one
command that builds it when it is missing, so a user never gets a bare class-path error.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..adapters.stdio import StdioAdapter
from .kafka import START_TIMEOUT_S, KafkaAdapterUnavailable, build_command, maven_package


@dataclass(frozen=True)
class KafkaLine:
    """One older Kafka line: its Maven module, its main class and what it runs."""

    folder: str
    """The module under ``adapters/`` (``kafka-2.6``)."""
    main_class: str
    """The adapter's entry point (``kconform.kafka26.Main``)."""
    env_dir: str
    """The environment variable that points kconform at another copy of the module."""
    describes: str
    """What the line runs, for messages (``Kafka 2.6.3, leader-epoch``)."""

    @property
    def build_command(self) -> str:
        """The documented command that builds the module (from the checkout's root)."""
        return build_command(self.folder)


KAFKA_26 = KafkaLine(
    folder="kafka-2.6",
    main_class="kconform.kafka26.Main",
    env_dir="KCONFORM_KAFKA_26_ADAPTER",
    describes="Kafka 2.6.3 (leader-epoch)",
)

KAFKA_010 = KafkaLine(
    folder="kafka-0.10",
    main_class="kconform.kafka010.Main",
    env_dir="KCONFORM_KAFKA_010_ADAPTER",
    describes="Kafka 0.10.2.2 (hw-truncation)",
)

LINES = (KAFKA_26, KAFKA_010)


def adapter_dir(line: KafkaLine) -> Path:
    """The line's Maven project (``$<env_dir>`` or ``adapters/<folder>`` of this checkout)."""
    override = os.environ.get(line.env_dir)
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / "adapters" / line.folder


def is_built(line: KafkaLine, directory: Path | None = None) -> bool:
    """True when the compiled main class and Kafka's jars are in ``target/``."""
    d = directory or adapter_dir(line)
    main = d / "target" / "classes" / Path(*line.main_class.split(".")).with_suffix(".class")
    return main.is_file() and (d / "target" / "lib").is_dir()


def build(line: KafkaLine, directory: Path | None = None) -> None:
    """Run the line's Maven build (the first run downloads that Kafka from Maven Central)."""
    maven_package(directory or adapter_dir(line), line.describes, f"set {line.env_dir}", line.build_command)


def command(line: KafkaLine, directory: Path | None = None) -> list[str]:
    """The command that starts the line's built adapter."""
    d = directory or adapter_dir(line)
    classpath = os.pathsep.join([str(d / "target" / "classes"), str(d / "target" / "lib" / "*")])
    return ["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classpath, line.main_class]


def start(line: KafkaLine) -> StdioAdapter:
    """The line's adapter, or an error that says what to install or run."""
    d = adapter_dir(line)
    if shutil.which("java") is None:
        raise KafkaAdapterUnavailable(f"the {line.describes} adapter needs java (JDK 17+) on PATH")
    if not is_built(line, d):
        raise KafkaAdapterUnavailable(
            f"the {line.describes} adapter is not built: run `{line.build_command}` in {d.parents[1]}"
        )
    return StdioAdapter(command(line, d), start_timeout_s=START_TIMEOUT_S)


def kafka_26() -> StdioAdapter:
    """Apache Kafka 2.6.3's own Partition and Log (leader-epoch), via adapters/kafka-2.6."""
    return start(KAFKA_26)


def kafka_010() -> StdioAdapter:
    """Apache Kafka 0.10.2.2's own Partition, Replica and Log (hw-truncation), via adapters/kafka-0.10."""
    return start(KAFKA_010)


if __name__ == "__main__":  # python3 -m conformance.implementations.kafka_lines: build every older line
    for each in LINES:
        build(each)
        print(f"built {adapter_dir(each)}")
