#!/usr/bin/env bash
# spark-submit with this project's environment: .venv (set up by .ci/setup with the exact versions of
# constraints.txt: the package, its `delta` extra and the jars the jobs use, not the tests' layer), its interpreter on
# driver and executors, the Delta Lake and Spark Kafka connector jars for its PySpark, Delta's SQL extensions.
# Arguments pass through. Ctrl-C and SIGTERM go to the Python driver, not to the JVM and its children
# (kafka_spark/app/submit.py), so a stream stops after its micro-batch.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bash "$ROOT/.ci/setup"
PY="$ROOT/.venv/bin/python"
export PYSPARK_PYTHON="$PY" PYSPARK_DRIVER_PYTHON="$PY"
mapfile -t CONF < <("$PY" -m kafka_spark.local.spark --submit-args)
exec "$PY" -m kafka_spark.app.submit "$ROOT/.venv/bin/spark-submit" "${CONF[@]}" "$@"
