"""JVM artifacts from Maven Central, fetched once with `mvn` into a cache outside the repository.

The Spark sets follow the installed PySpark: Spark's Kafka connector at its version, the Delta release
built for its minor version (none for a Spark that no Delta release is built for, PySpark 4.3: its sessions run
without Delta on Spark, and the direct writer needs only delta-rs), and hadoop-aws at the Hadoop version inside it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from importlib import metadata, resources, util
from pathlib import Path

from kafka_spark.errors import KafkaSparkError

# name -> (pom file in kafka_spark/local/poms, extra mvn arguments)
ARTIFACT_SETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "kafka4": ("kafka4.xml", ()),
    # Spark ships its own slf4j; a second copy on the class path only produces warnings.
    "spark": ("spark.xml", ("-DexcludeGroupIds=org.slf4j",)),
    "s3a": ("s3a.xml", ("-DexcludeGroupIds=org.slf4j",)),
}

# The sets on every local Spark session's class path; s3a costs nothing until an s3a:// path is used.
SPARK_SETS = ("spark", "s3a")

# The Delta release whose jars are built for each Spark minor version, when no `delta-spark` Python package
# says otherwise. Delta 4.1 and later publish one artifact per Spark minor (`delta-spark_4.1_2.13`); 4.4.0
# has them for Spark 4.0 (from 4.0.1), 4.1 and 4.2. Spark 4.0.0 itself needs Delta 4.0.0 (`delta-spark_2.13`).
DELTA_FOR_SPARK: dict[str, str] = {"4.0": "4.4.0", "4.1": "4.4.0", "4.2": "4.4.0"}
DELTA_FOR_SPARK_4_0_0 = "4.0.0"

# Spark minors whose Kafka connector (and Avro functions) Central does not publish yet, with the newest release it
# has: that one serves until the minor's own appears (Maven picks that up then). spark-sql-kafka 4.2.0 reads
# and writes on Spark 4.3.0 (tests/integration/compat).
CONNECTOR_BEFORE_RELEASE: dict[str, str] = {"4.3": "4.2.0"}

# The AWS SDK v2 release that each Hadoop names in its hadoop-project POM (`aws-java-sdk-v2.version`).
AWS_SDK_FOR_HADOOP: dict[str, str] = {"3.4.1": "2.24.6", "3.4.2": "2.29.52", "3.5.0": "2.35.4"}

_VERSIONED_JAR = re.compile(r"^(?P<name>.+?)-(?P<version>\d[\w.\-]*)\.jar$")
# Delta's properties and dependencies in the spark pom, left out for a Spark that no Delta release is built for.
_DELTA_IN_POM = re.compile(r"\n\s*<(delta\.\w+)>[^<]*</\1>"
                           r"|\n\s*<dependency><groupId>io\.delta</groupId>.*?</dependency>", re.S)


class JarFetchError(KafkaSparkError):
    """Maven could not resolve the artifacts of a local server or Spark."""


def cache_dir() -> Path:
    """The cache root: `$KAFKA_SPARK_CACHE`, else `$XDG_CACHE_HOME/kafka-spark`, else `~/.cache/kafka-spark`."""
    explicit = os.environ.get("KAFKA_SPARK_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kafka-spark"


class SparkVersionError(KafkaSparkError):
    """The installed PySpark has no matching Delta or Hadoop artifacts."""


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def _installed(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def pyspark_version() -> str:
    """The installed PySpark's version (read from its metadata, without importing it)."""
    version = _installed("pyspark")
    if version is None:
        raise SparkVersionError("PySpark is not installed")
    return version


def pyspark_jars_dir() -> Path:
    """The `jars/` directory inside the installed PySpark."""
    spec = util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise SparkVersionError("PySpark is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "jars"


def delta_artifact(spark_version: str, delta_version: str | None = None) -> tuple[str, str]:
    """(artifactId, version) of Delta's Spark jar for `spark_version`; `delta_version` is the installed
    `delta-spark` Python package's, whose jars must match it."""
    minor = ".".join(spark_version.split(".")[:2])
    if delta_version is None:
        if minor not in DELTA_FOR_SPARK:
            raise SparkVersionError(f"no Delta Lake release is built for Spark {minor} yet; Delta's jars exist "
                                    f"for Spark {min(DELTA_FOR_SPARK)}.x-{max(DELTA_FOR_SPARK)}.x")
        low = _version_tuple(spark_version) < (4, 0, 1)
        delta_version = DELTA_FOR_SPARK_4_0_0 if low else DELTA_FOR_SPARK[minor]
    suffixed = _version_tuple(delta_version) >= (4, 1)
    return (f"delta-spark_{minor}_2.13" if suffixed else "delta-spark_2.13"), delta_version


def spark_delta(spark_version: str, delta_version: str | None = None) -> tuple[str, str] | None:
    """`delta_artifact` for the local session's Spark, or None when no Delta release is built for it: a session
    that goes without Delta rather than not at all."""
    minor = ".".join(spark_version.split(".")[:2])
    if delta_version is None and minor not in DELTA_FOR_SPARK:
        return None
    return delta_artifact(spark_version, delta_version)


def has_delta() -> bool:
    """Whether local sessions of the installed PySpark get Delta Lake's jars (and so its extension and catalog)."""
    return spark_delta(pyspark_version(), _installed("delta-spark")) is not None


def hadoop_version() -> str:
    """The Hadoop version inside the installed PySpark (its `hadoop-client-api` jar)."""
    jars = sorted(pyspark_jars_dir().glob("hadoop-client-api-*.jar"))
    if len(jars) != 1:
        raise SparkVersionError(f"expected one hadoop-client-api jar in {pyspark_jars_dir()}, found {len(jars)}")
    return jars[0].name[len("hadoop-client-api-"):-len(".jar")]


def pom_properties(name: str) -> dict[str, str]:
    """The pom properties that follow the installed PySpark (empty for the sets that do not)."""
    if name == "spark":
        spark = pyspark_version()
        # A range: Central lacks some patch releases of the connector that PyPI has (4.1.4, 4.0.5); Maven takes
        # the newest one published up to the installed version (a connector is compatible within its minor).
        minor = ".".join(spark.split(".")[:2])
        version = f"[{minor}.0,{spark}]"
        before = CONNECTOR_BEFORE_RELEASE.get(minor)
        if before:
            # Exactly that release, not a range from it: Maven sorts 4.2.0-preview1 after 4.2.0.
            version = f"[{before},{before}],{version}"
        props = {"spark.version": version}
        delta = spark_delta(spark, _installed("delta-spark"))
        if delta is not None:
            props.update({"delta.artifact": delta[0], "delta.version": delta[1]})
        return props
    if name == "s3a":
        hadoop = hadoop_version()
        if hadoop not in AWS_SDK_FOR_HADOOP:
            raise SparkVersionError(f"no AWS SDK version known for Hadoop {hadoop} (PySpark {pyspark_version()}); "
                                    f"add hadoop-project's aws-java-sdk-v2.version to AWS_SDK_FOR_HADOOP")
        sdk = AWS_SDK_FOR_HADOOP[hadoop]
        # Central skips some SDK releases of the transfer manager (none for 2.24.6, Hadoop 3.4.1's): the newest
        # one published within the SDK's minor, up to the SDK itself.
        minor = ".".join(sdk.split(".")[:2])
        return {"hadoop.version": hadoop, "sdk.version": sdk, "transfer.version": f"[{minor}.0,{sdk}]"}
    return {}


def pom_text(name: str) -> str:
    """The pom of the artifact set `name`, its properties set for the installed PySpark."""
    text = (resources.files("kafka_spark.local") / "poms" / ARTIFACT_SETS[name][0]).read_text()
    props = pom_properties(name)
    if name == "spark" and "delta.version" not in props:
        text = _DELTA_IN_POM.sub("", text)
    for key, value in props.items():
        tag = re.escape(key)
        text, n = re.subn(rf"<{tag}>[^<]*</{tag}>", f"<{key}>{value}</{key}>", text)
        if n != 1:
            raise KafkaSparkError(f"pom {ARTIFACT_SETS[name][0]} has no single <{key}> property")
    return text


def jar_dir(name: str) -> Path:
    """Directory holding the jars of one artifact set (may not exist yet); the Spark sets have one per
    version, so environments with different PySpark versions share the cache."""
    props = pom_properties(name)
    if name == "spark":
        delta = f"-delta-{props['delta.version']}" if "delta.version" in props else ""
        name = f"spark-{pyspark_version()}{delta}"
    elif name == "s3a":
        name = f"s3a-hadoop-{props['hadoop.version']}"
    return cache_dir() / "jars" / name


def ensure_jars(name: str) -> Path:
    """Fetch the artifact set `name` unless the cache already holds it; return its jar directory."""
    if name not in ARTIFACT_SETS:
        raise KafkaSparkError(f"unknown artifact set {name!r}; known: {sorted(ARTIFACT_SETS)}")
    return fetch_pom(jar_dir(name), pom_text(name), ARTIFACT_SETS[name][1])


def fetch_pom(target: Path, pom_xml: str, mvn_args: Sequence[str] = ()) -> Path:
    """Copy the runtime dependencies of the Maven project `pom_xml` into the folder `target`, unless a fetch of
    the same pom put them there; return `target`."""
    stamp_file = target / ".complete"
    # The stamp ties the cached jars to the exact pom, so a version bump refetches.
    stamp = hashlib.sha256(pom_xml.encode()).hexdigest()[:16]
    if stamp_file.exists() and stamp_file.read_text() == stamp:
        return target
    if shutil.which("mvn") is None:
        raise JarFetchError("Maven (`mvn`) is not installed; install it (e.g. `apt-get install maven`)")
    work = cache_dir() / "poms"
    work.mkdir(parents=True, exist_ok=True)
    pom = work / f"{target.name}.xml"
    pom.write_text(pom_xml)
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    cmd = [
        "mvn", "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
        "-DincludeScope=runtime", f"-DoutputDirectory={staging}", *mvn_args,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
        raise JarFetchError(f"mvn failed to fetch {target.name} (exit {proc.returncode}):\n{tail}")
    if target.is_symlink():  # a cache sharing another's folder gets its own once the poms differ
        target.unlink()
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    stamp_file.write_text(stamp)
    return target


def classpath(name: str) -> str:
    """A Java class path (`dir/*`) for the artifact set `name`, fetching it if needed. The folder's real path: a
    cache whose jar folders are links to another's (the tests' private caches) starts the same JVMs, which then
    share their class archives (keyed on the class path) rather than each writing its own."""
    return str(ensure_jars(name).resolve() / "*")


def _artifact_name(jar: str) -> str:
    m = _VERSIONED_JAR.match(jar)
    return m.group("name") if m else jar


def spark_jars() -> list[str]:
    """Absolute paths of the extra jars for a pip-installed PySpark: Delta (where built for it), Spark's Kafka
    connector and s3a://.

    Jars that PySpark already ships (Scala, Hadoop, Jackson, Parquet, Netty, ...) are left out, so the
    session keeps PySpark's own versions of them.
    """
    shipped = {_artifact_name(p.name) for p in pyspark_jars_dir().glob("*.jar")}
    jars = (p for name in SPARK_SETS for p in ensure_jars(name).glob("*.jar"))
    return sorted(str(p) for p in jars if _artifact_name(p.name) not in shipped)
