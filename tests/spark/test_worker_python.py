"""Spark's Python workers on another interpreter than the driver's: Spark reports DATA_SOURCE_NOT_FOUND, and
`kafka_spark.register(spark)` says why, naming both interpreters."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

APP = '''
import json, sys
from pyspark.sql import SparkSession
import kafka_spark

spark = SparkSession.builder.master("local[1]").config("spark.driver.host", "127.0.0.1") \\
    .config("spark.driver.bindAddress", "127.0.0.1").config("spark.ui.enabled", "false").getOrCreate()
out = {}
try:
    spark.read.format("pykafka").option("kafka.bootstrap.servers", "127.0.0.1:9").option("subscribe", "t").load()
except Exception as exc:
    out["read"] = str(exc)
try:
    kafka_spark.register(spark)
except kafka_spark.ConfigError as exc:
    out["register"] = f"{type(exc).__name__}: {exc}"
spark.stop()
print(json.dumps(out))
'''


def test_workers_without_the_package_are_named(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)  # an interpreter without kafka-spark, as a non-activated venv leaves `python3`
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_DRIVER_PYTHON"}
    env["PYSPARK_PYTHON"] = str(bare / "bin" / "python")
    proc = subprocess.run([sys.executable, "-c", APP], env=env, capture_output=True, text=True, timeout=300,
                          check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "DATA_SOURCE_NOT_FOUND" in out["read"]
    assert out["register"] == (
        f"WorkerPythonError: Spark's Python workers run {bare / 'bin' / 'python'}, which does not have kafka-spark "
        f"(this driver runs {sys.executable}), so Spark finds no data source 'pykafka' (DATA_SOURCE_NOT_FOUND): "
        f"set PYSPARK_PYTHON={sys.executable} before the session starts, or install kafka-spark into that "
        "interpreter")
