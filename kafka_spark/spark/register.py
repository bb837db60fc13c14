"""Explicit registration, for sessions where Spark's automatic `pyspark_*` lookup is off or unavailable."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Any

from kafka_spark.errors import ConfigError


class WorkerPythonError(ConfigError):
    """Spark's Python workers run an interpreter that cannot import kafka_spark."""


def _setting(spark: Any, conf: str, env: str) -> str | None:
    # A Spark setting, else the environment the JVM was launched with (Spark starts its workers from there).
    try:
        value = spark.conf.get(conf, None)
    except Exception:  # a session without a readable conf
        value = None
    if value:
        return value
    try:
        return spark._jvm.java.lang.System.getenv(env)
    except Exception:  # Spark Connect and other sessions without a local JVM
        return os.environ.get(env)


def worker_pythons(spark: Any) -> dict[str, str]:
    """The interpreters Spark starts for Python workers, as Spark picks them: on the driver, to look the data
    sources up and plan them (`spark.pyspark.driver.python`, `spark.pyspark.python`, `PYSPARK_DRIVER_PYTHON`,
    `PYSPARK_PYTHON`, else `python3`), and on the executors, to read (`spark.pyspark.python`, `PYSPARK_PYTHON`,
    else `python3`)."""
    executors = _setting(spark, "spark.pyspark.python", "PYSPARK_PYTHON")
    driver = _setting(spark, "spark.pyspark.driver.python", "PYSPARK_DRIVER_PYTHON")
    return {"PYSPARK_PYTHON": executors or "python3", "PYSPARK_DRIVER_PYTHON": driver or executors or "python3"}


def check_worker_python(spark: Any) -> None:
    """Raise WorkerPythonError when a workers' interpreter, found on this machine, cannot import kafka_spark
    (Spark then reports DATA_SOURCE_NOT_FOUND for "pykafka", or its tasks fail); say nothing when it cannot
    be checked."""
    probe = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('pyspark_kafka_spark') else 3)"
    for variable, python in worker_pythons(spark).items():
        exe = shutil.which(python)
        # Not realpath: every venv's python links to the same binary, yet each sees only its own packages.
        if exe is None or os.path.abspath(exe) == os.path.abspath(sys.executable):
            continue
        try:
            code = subprocess.run([exe, "-c", probe], capture_output=True, timeout=60, check=False).returncode
        except (OSError, subprocess.TimeoutExpired):
            continue
        if code == 3:
            raise WorkerPythonError(
                f"Spark's Python workers run {exe}, which does not have kafka-spark (this driver runs "
                f"{sys.executable}), so Spark finds no data source 'pykafka' (DATA_SOURCE_NOT_FOUND): set "
                f"{variable}={sys.executable} before the session starts, or install kafka-spark into that interpreter")


def register(spark) -> None:
    """Register the `pykafka` and `pykafka-log` data sources on `spark` (a SparkSession), and make it hide
    the secret `kafka.*` options in plans; first check that Spark's Python workers can import kafka_spark."""
    from kafka_spark.spark.datasource import KafkaDataSource
    from kafka_spark.spark.log.source import KafkaLogDataSource
    from kafka_spark.spark.redaction import redact_secret_options

    check_worker_python(spark)
    redact_secret_options(spark)
    spark.dataSource.register(KafkaDataSource)
    spark.dataSource.register(KafkaLogDataSource)
