"""Building the class archives ahead (kafka_spark/local/class_archive.py), for a set-up that starts the same JVMs
many times (the tests' set-up runs `python -m kafka_spark.local.archive_build`): Spark's driver's, from a throwaway
session, and the broker's, from a broker started and stopped. A job's first run does without: its JVMs write their
own as they exit."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from kafka_spark.local.class_archive import DUMP_OPTION, UNUSED_DAYS, archive_path, prune, write_server_archives
from kafka_spark.local.jars import classpath
from kafka_spark.local.kafka import start_kafka
from kafka_spark.local.spark import JAVA_OPTIONS, local_spark


def build_archive(timeout: float = 600) -> Path | None:
    """Build Spark's driver's archive unless it exists; its path, or None when this JVM cannot make one."""
    path = archive_path()
    if path is None:
        return None
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    try:
        subprocess.run([sys.executable, "-m", "kafka_spark.local.archive_build", "--dump", str(partial)],
                       capture_output=True, timeout=timeout, check=True)
        if not partial.is_file():
            return None
        os.replace(partial, path)
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        partial.unlink(missing_ok=True)
    return path


def _dump(target: str) -> None:
    """Run a small session whose JVM writes the classes it loaded to `target` as it exits."""
    spark = local_spark("kafka-spark-class-archive",
                        extra={JAVA_OPTIONS: f"{DUMP_OPTION}={target} -Xlog:cds=off -Xlog:cds+dynamic=off"})
    try:
        df = spark.range(1000).selectExpr("id", "CAST(id AS STRING) AS value")
        folder = Path(target).with_suffix(".parquet")
        df.write.mode("overwrite").parquet(str(folder))
        spark.read.parquet(str(folder)).groupBy("value").count().collect()
        shutil.rmtree(folder, ignore_errors=True)
    finally:
        spark.stop()


def build_server_archives() -> list[Path]:
    """Start and stop a Kafka 4 broker, the server of `kafka-spark local start`, so that it writes its archive
    (skipped where one exists); the archives in place afterwards."""
    return write_server_archives([(classpath("kafka4"), "kafka.Kafka")],
                                 lambda tmp: start_kafka(tmp / "kafka4", secure=False).stop())


def main() -> None:
    for old in prune():
        print(f"class archive: deleted {old.name} (unused for {UNUSED_DAYS} days)")
    built = build_archive()
    print(f"class archive: {built}" if built else "class archive: not built (this JVM cannot make one)")
    for server in build_server_archives():
        print(f"class archive: {server}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--dump"]:
        _dump(sys.argv[2])
    else:
        main()
