"""The Spark session, set up in code so a user only names a master.

- ``PYSPARK_PYTHON`` (and ``spark.pyspark.python``) = this interpreter: the workers
  import kconform from the same environment as the driver;
- local masters and loopback clusters bind everything to 127.0.0.1 (``SPARK_LOCAL_IP``,
  driver host and bind address), so nothing listens on the machine's network;
- the UI and the console progress bar are off; logs at WARN (kconform prints its own
  progress);
- Java is checked first: a missing or too old Java is one clear ``SparkSetupError``
  line, not a Py4J stack trace; so is a ``spark://`` master that does not answer.

``pyspark`` is imported here only, so commands that never touch Spark do not pay for it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

MIN_JAVA = 17
LOOPBACK = ("127.0.0.1", "localhost")


class SparkSetupError(Exception):
    """Spark cannot start here (no Java, an old Java, no pyspark); the message says what to do."""


def java_command() -> str:
    """The ``java`` Spark will run: ``$JAVA_HOME/bin/java`` or the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        if os.access(candidate, os.X_OK):
            return candidate
        raise SparkSetupError(f"JAVA_HOME={home} has no bin/java; point it at a Java {MIN_JAVA} or 21 install")
    found = shutil.which("java")
    if found is None:
        raise SparkSetupError(
            f"Spark needs Java {MIN_JAVA} or 21 and none was found (no java on PATH, JAVA_HOME unset): "
            "install it (Debian/Ubuntu: apt-get install openjdk-17-jre-headless), "
            "or use --backend processes"
        )
    return found


def java_major(java: str) -> int | None:
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def check_java() -> None:
    java = java_command()
    major = java_major(java)
    if major is None:
        raise SparkSetupError(f"{java} does not run (`{java} -version` failed); Spark needs Java {MIN_JAVA} or 21")
    if major < MIN_JAVA:
        raise SparkSetupError(f"{java} is Java {major}; Spark 4 needs Java {MIN_JAVA} or 21 (set JAVA_HOME)")


LOG4J2 = """\
# kconform: Spark's own logging at WARN, Hadoop's native-library notice and the like silenced
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
logger.netty.name = io.netty
logger.netty.level = error
"""


def log4j2_file() -> str:
    """A log4j2 configuration for the driver JVM (written once per machine user)."""
    path = os.path.join(tempfile.gettempdir(), f"kconform-log4j2-{os.getuid()}.properties")
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == LOG4J2:
                return path
    except OSError:
        pass
    with open(path, "w", encoding="utf-8") as f:
        f.write(LOG4J2)
    return path


def is_loopback(master: str) -> bool:
    if master.startswith("local"):
        return True
    host = urlparse(master).hostname or ""
    return host in LOOPBACK


def configure_environment(master: str) -> None:
    """The environment Spark reads when it starts its JVM and Python workers."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    if is_loopback(master):
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"


def check_master(master: str, timeout_s: float = 5.0) -> None:
    """A ``spark://HOST:PORT`` master must answer a TCP connection: an unreachable one is
    one line now, not two minutes of retries and a Java stack trace."""
    if not master.startswith("spark://"):
        return
    for address in master[len("spark://") :].split(","):  # a standby list: any one answering will do
        parsed = urlparse(f"spark://{address}")
        try:
            host, port = parsed.hostname, parsed.port or 7077
        except ValueError:
            raise SparkSetupError(f"--master {master}: not spark://HOST:PORT") from None
        if host is None:
            raise SparkSetupError(f"--master {master}: not spark://HOST:PORT")
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
    raise SparkSetupError(
        f"cannot reach the Spark master {master} ({reason}): start it (docs/replay.md, "
        "'A standalone cluster'), check the address, or use --master 'local[*]' or --backend processes"
    )


JVM_NOISE = (b"WARNING: Using incubator modules: jdk.incubator.vector",)
"""Lines the JVM prints on every start that say nothing to a kconform user."""


@contextlib.contextmanager
def _quiet_jvm_stderr() -> Iterator[None]:
    """Start the JVM with its stderr through a pipe that drops ``JVM_NOISE`` lines and
    passes everything else on (its warnings and errors, the workers' output), for the
    JVM's whole life; kconform's own stderr is restored as soon as the JVM is up."""
    try:
        saved = os.dup(2)
        read_end, write_end = os.pipe()
    except OSError:  # no stderr to redirect (a closed fd 2): start as is
        yield
        return
    forward = threading.Thread(target=_forward, args=(read_end, saved), name="kconform-jvm-stderr", daemon=True)
    forward.start()
    os.dup2(write_end, 2)
    os.close(write_end)
    try:
        yield
    finally:
        os.dup2(saved, 2)  # the JVM keeps the pipe; this process writes to the terminal again


def _forward(read_end: int, out: int) -> None:
    pending = b""
    with contextlib.suppress(OSError):
        while chunk := os.read(read_end, 65536):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            kept = [line for line in lines if line.strip() not in JVM_NOISE]
            if kept:
                os.write(out, b"\n".join(kept) + b"\n")
        if pending and pending.strip() not in JVM_NOISE:
            os.write(out, pending)


def session(master: str = "local[*]", app: str = "kconform", conf: dict[str, str] | None = None) -> Any:
    """A SparkSession for ``master``; raise ``SparkSetupError`` when Spark cannot start."""
    check_java()
    check_master(master)
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise SparkSetupError(f"pyspark is not installed in {sys.prefix} ({exc}); pip install pyspark") from None
    configure_environment(master)
    builder = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.pyspark.python", sys.executable)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.log.level", "WARN")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.python.worker.reuse", "true")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j.configurationFile=file:{log4j2_file()}")
        .config("spark.executor.extraJavaOptions", f"-Dlog4j.configurationFile=file:{log4j2_file()}")
    )
    if is_loopback(master):
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    try:
        with _quiet_jvm_stderr():
            spark = builder.getOrCreate()
    except Exception as exc:  # Py4J / JVM start-up failure: one line, the cause last
        message = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise SparkSetupError(f"Spark did not start with master {master}: {message}") from None
    spark.sparkContext.setLogLevel("WARN")
    return spark
