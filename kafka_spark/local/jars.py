"""JVM artifacts from Maven Central, fetched once with `mvn` into a cache outside the repository."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path

from kafka_spark.errors import KafkaSparkError

# name -> (pom file in kafka_spark/local/poms, extra mvn arguments)
ARTIFACT_SETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "kafka4": ("kafka4.xml", ()),
    "kafka39": ("kafka39.xml", ()),
    # Spark ships its own slf4j; a second copy on the class path only produces warnings.
    "spark": ("spark.xml", ("-DexcludeGroupIds=org.slf4j",)),
    "s3a": ("s3a.xml", ("-DexcludeGroupIds=org.slf4j",)),
}

# The sets on every local Spark session's class path; s3a costs nothing until an s3a:// path is used.
SPARK_SETS = ("spark", "s3a")

_VERSIONED_JAR = re.compile(r"^(?P<name>.+?)-(?P<version>\d[\w.\-]*)\.jar$")


class JarFetchError(KafkaSparkError):
    """Maven could not resolve the artifacts of a local server or Spark."""


def cache_dir() -> Path:
    """The cache root: `$KAFKA_SPARK_CACHE`, else `$XDG_CACHE_HOME/kafka-spark`, else `~/.cache/kafka-spark`."""
    explicit = os.environ.get("KAFKA_SPARK_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kafka-spark"


def _pom_text(name: str) -> str:
    return resources.files("kafka_spark.local").joinpath("poms", ARTIFACT_SETS[name][0]).read_text()


def _stamp(name: str) -> str:
    # The stamp ties the cached jars to the exact pom, so a version bump refetches.
    import hashlib

    return hashlib.sha256(_pom_text(name).encode()).hexdigest()[:16]


def jar_dir(name: str) -> Path:
    """Directory holding the jars of one artifact set (may not exist yet)."""
    return cache_dir() / "jars" / name


def ensure_jars(name: str) -> Path:
    """Fetch the artifact set `name` unless the cache already holds it; return its jar directory."""
    if name not in ARTIFACT_SETS:
        raise KafkaSparkError(f"unknown artifact set {name!r}; known: {sorted(ARTIFACT_SETS)}")
    target = jar_dir(name)
    stamp_file = target / ".complete"
    stamp = _stamp(name)
    if stamp_file.exists() and stamp_file.read_text() == stamp:
        return target
    if shutil.which("mvn") is None:
        raise JarFetchError("Maven (`mvn`) is not installed; install it (e.g. `apt-get install maven`)")
    work = cache_dir() / "poms"
    work.mkdir(parents=True, exist_ok=True)
    pom = work / ARTIFACT_SETS[name][0]
    pom.write_text(_pom_text(name))
    staging = target.with_name(name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    cmd = [
        "mvn", "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
        "-DincludeScope=runtime", f"-DoutputDirectory={staging}", *ARTIFACT_SETS[name][1],
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
        raise JarFetchError(f"mvn failed to fetch {name} (exit {proc.returncode}):\n{tail}")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    stamp_file.write_text(stamp)
    return target


def classpath(name: str) -> str:
    """A Java class path (`dir/*`) for the artifact set `name`, fetching it if needed."""
    return str(ensure_jars(name) / "*")


def _artifact_name(jar: str) -> str:
    m = _VERSIONED_JAR.match(jar)
    return m.group("name") if m else jar


def spark_jars() -> list[str]:
    """Absolute paths of the extra jars for a pip-installed PySpark: Delta, Spark's Kafka connector and s3a://.

    Jars that PySpark already ships (Scala, Hadoop, Jackson, Parquet, Netty, ...) are left out, so the
    session keeps PySpark's own versions of them.
    """
    import pyspark

    shipped = {_artifact_name(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    jars = (p for name in SPARK_SETS for p in ensure_jars(name).glob("*.jar"))
    return sorted(str(p) for p in jars if _artifact_name(p.name) not in shipped)
