"""A local SparkSession with Delta Lake (where a release is built for its Spark), Spark's own Kafka connector (the
comparison oracle) and s3a://."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from kafka_spark.local.class_archive import DUMP_OPTION, driver_options
from kafka_spark.local.jars import has_delta, spark_jars
from kafka_spark.local.process import QUICK_JIT, quick_start
from kafka_spark.local.runner_zygote import start_zygote
from kafka_spark.local.worker_python import worker_daemon, worker_python
from kafka_spark.spark.redaction import OPTIONS_REGEX_CONF, redaction_regex

JAVA_OPTIONS = "spark.driver.extraJavaOptions"
CHECKPOINT_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"

DELTA_CONFIGS = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def local_spark_configs(master: str = "local[2]", jars: bool = True) -> dict[str, str]:
    """The configs of `local_spark`, for spark-submit or a custom builder."""
    conf = {
        "spark.master": master,
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.showConsoleProgress": "false",
        # Delta's default of 50 partitions for log replay dominates small local tables.
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.sql.session.timeZone": "UTC",
        # this interpreter, importing the installed PySpark rather than Spark's zipped copy (worker_python.py);
        # the driver's setting also starts the processes that look data sources up, plan them and run streams
        "spark.pyspark.python": worker_python(),
        "spark.pyspark.driver.python": worker_python(),
        "spark.sql.warehouse.dir": os.path.join(tempfile.gettempdir(), "kafka-spark-warehouse"),
        # plans show source options; Spark's default patterns miss e.g. kafka.ssl.keystore.key
        OPTIONS_REGEX_CONF: redaction_regex(None),
        CHECKPOINT_MANAGER: checkpoint_manager(),
        # Delta's extension and catalog only with its jars: with the catalog's class missing every query fails,
        # `spark.range(3).count()` too (PySpark 4.3, which no Delta release is built for).
        **(DELTA_CONFIGS if has_delta() else {}),
    }
    daemon = worker_daemon(worker_python())
    if daemon:
        # PySpark's daemon, acknowledging each task's input at once over TCP (pyspark_worker_daemon.py)
        conf["spark.python.daemon.module"] = daemon
    # A quick start's Spark JVMs also collect on one thread: G1's concurrent threads cost CPU a short life never
    # pays back (5% of a two-job test's CPU, broker and Python included).
    quick = " ".join([*QUICK_JIT, "-XX:+UseSerialGC"]) if quick_start() else ""
    # the driver JVM maps Spark's classes pre-parsed (class_archive.py), or writes them as it exits
    driver = " ".join(filter(None, [driver_options(), quick]))
    if driver:
        conf[JAVA_OPTIONS] = driver
    if quick:
        conf["spark.executor.extraJavaOptions"] = quick
        # A quick start's queries are small: adaptive execution's stage-by-stage re-planning cost a two-load test 8%
        # of its time and saved nothing (streams run without it anyway).
        conf["spark.sql.adaptive.enabled"] = "false"
    if jars:
        conf["spark.jars"] = ",".join(spark_jars())
    return conf


def checkpoint_manager() -> str:
    """Spark's FileSystem-based checkpoint file manager, by its class name in this PySpark (its package moved in 4.1).

    A stream writes two checkpoint files a micro-batch (its offset and commit logs). Spark's default manager, built
    on Hadoop's FileContext, took 40-44 ms a file on a local disk where PySpark's wheel has no native Hadoop library,
    the FileSystem-based one 10-12 ms: 60-80 ms of every micro-batch, which a one-second stream's freshness pays.
    Both write a temporary file and rename it, which local disks and HDFS do atomically.
    """
    from importlib.metadata import version

    major, minor = (int(part) for part in version("pyspark").split(".")[:2])
    package = "org.apache.spark.sql.execution.streaming" + (".checkpointing" if (major, minor) >= (4, 1) else "")
    return f"{package}.FileSystemBasedCheckpointFileManager"


def merged_configs(conf: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """`conf` with `extra` over it; driver JVM options given in both are joined, the extra ones last (so
    they win), unless they make a class archive themselves (which cannot start from one). Ours that would write
    an archive go when theirs turn sharing off: such a JVM refuses to start."""
    out = {**conf, **extra}
    ours, theirs = conf.get(JAVA_OPTIONS), extra.get(JAVA_OPTIONS)
    if ours and theirs and DUMP_OPTION not in theirs:
        if DUMP_OPTION in ours and "-Xshare:off" in theirs.split():
            ours = " ".join(o for o in ours.split() if not o.startswith((DUMP_OPTION, "-Xlog:cds")))
        out[JAVA_OPTIONS] = f"{ours} {theirs}".strip()
    return out


def local_spark(app_name: str = "kafka-spark", master: str = "local[2]",
                extra: Mapping[str, str] | None = None):  # -> pyspark.sql.SparkSession
    """Get or create a SparkSession on 127.0.0.1 with Delta, the Kafka connector and the s3a:// jars.

    An object store's settings go in `extra` as `spark.hadoop.fs.s3a.*`.

    Executors run this interpreter (`PYSPARK_PYTHON`), the one that has kafka_spark installed, through
    `worker_python()` so that they import the installed PySpark, not Spark's zip. On a Databricks
    cluster it returns the cluster's session, which has its own Spark, Delta and Python set-up.
    """
    from pyspark.sql import SparkSession

    if os.environ.get("DATABRICKS_RUNTIME_VERSION"):
        return SparkSession.builder.getOrCreate()
    os.environ.setdefault("PYSPARK_PYTHON", worker_python())
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", worker_python())
    if worker_python() != sys.executable and os.environ.get("PYSPARK_PYTHON") == worker_python():
        # streams' source processes forked warm (runner_zygote.py), through the launcher; the JVM inherits the
        # zygote's address from this process's environment, so before it starts
        start_zygote(Path(worker_python()).parent, sys.executable)

    builder = SparkSession.builder.appName(app_name)
    for k, v in merged_configs(local_spark_configs(master), extra or {}).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("KAFKA_SPARK_SPARK_LOG_LEVEL", "WARN"))
    return spark


def set_hadoop_conf(spark, conf: Mapping[str, str]) -> None:  # spark: pyspark.sql.SparkSession
    """Set Hadoop settings (e.g. `fs.s3a.*`) on a running session.

    Hadoop caches a file system per scheme and bucket, so only those created afterwards see them.
    """
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    for k, v in conf.items():
        hadoop.set(k, v)


def submit_args(master: str = "local[2]") -> list[str]:
    """`--conf k=v` arguments for spark-submit, one token per element (driver logging at WARN)."""
    from importlib import resources

    log_conf = resources.files("kafka_spark.local") / "templates" / "log4j2-spark-submit.properties"
    conf = local_spark_configs(master)
    # spark-submit's --driver-java-options is spark.driver.extraJavaOptions: one value holds both
    java = " ".join(filter(None, [f"-Dlog4j2.configurationFile={log_conf}", conf.pop(JAVA_OPTIONS, None)]))
    out: list[str] = ["--driver-java-options", java]
    for k, v in conf.items():
        out += ["--conf", f"{k}={v}"]
    return out


if __name__ == "__main__":
    import sys as _sys

    if _sys.argv[1:] == ["--submit-args"]:
        print("\n".join(submit_args()))
    else:
        raise SystemExit("usage: python -m kafka_spark.local.spark --submit-args")
