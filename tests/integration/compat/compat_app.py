"""Runs inside a virtual environment with another PySpark and the built wheel: reads a topic with
`format("pykafka")` (registered by Spark itself, no `register()` call) and its log files with `format("pykafka-log")`,
checks them against Spark's own Kafka source, loads the topic into Delta with the direct writer (delta-rs), round
trips it through Spark's Delta writer where the harness has Delta's jars for this PySpark (else records the error
that names what needs delta-spark), writes back to Kafka, and runs the streams this PySpark has (reporting the
version errors of those it lacks). Prints one JSON line."""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable


def first_error(action: Callable[[], object], marker: str) -> str:
    """"" when `action` runs, else the line of its error that names `marker` (Spark wraps Python errors in its own
    text: that line is what users read), else the error's first line."""
    try:
        action()
    except Exception as exc:
        lines = f"{type(exc).__name__}: {exc}".splitlines()
        return next((line.strip() for line in lines if marker in line), lines[0])
    return ""


def run_stream(query) -> None:
    try:
        query.processAllAvailable()
    finally:
        query.stop()


def main(bootstrap: str, topic: str, log_copy: str) -> None:
    import pyspark
    from deltalake import DeltaTable

    from kafka_spark.delta import load, start_stream
    from kafka_spark.local.jars import has_delta, pom_properties
    from kafka_spark.local.spark import local_spark
    from kafka_spark.sink import LoadOptions, StreamOptions

    spark = local_spark("kafka-spark-compat", master="local[2]")
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic}
    ours = spark.read.format("pykafka").options(**options).load()
    theirs = spark.read.format("kafka").options(**options).load()
    from_log = spark.read.format("pykafka-log").option("path", log_copy).option("subscribe", topic).load()
    cols = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    rows = sorted(ours.select(*cols).collect())
    same = rows == sorted(theirs.select(*cols).collect())
    log = sorted(from_log.select(*cols).collect())
    log_same = log == rows

    kafka = {"bootstrap.servers": bootstrap}
    direct_table = tempfile.mkdtemp(prefix="compat-direct-")
    direct = load(spark, LoadOptions(table=direct_table, kafka=kafka, topics=[topic], writer="direct"))
    direct_rows = DeltaTable(direct_table).to_pyarrow_table().num_rows
    spark_table = tempfile.mkdtemp(prefix="compat-spark-writer-")
    delta_rows, spark_writer_error = -1, ""
    if has_delta():
        ours.write.format("delta").mode("overwrite").save(spark_table)
        delta_rows = spark.read.format("delta").load(spark_table).count()
    else:
        spark_writer_error = first_error(
            lambda: load(spark, LoadOptions(table=spark_table, kafka=kafka, topics=[topic], writer="spark")),
            "DeltaSparkError")

    copy = f"{topic}-copy-{pyspark.__version__}"
    (ours.select("key", "value").write.format("pykafka").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", copy).mode("append").save())
    written = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", copy).load()
    copied = sorted(r.value for r in written.select("value").collect()) == sorted(r.value for r in rows)

    # The Delta stream reads with readStream.format("pykafka") and commits with the direct writer.
    stream_table = tempfile.mkdtemp(prefix="compat-stream-")
    stream_error = first_error(
        lambda: run_stream(start_stream(spark, StreamOptions(table=stream_table, kafka=kafka, topics=[topic]))),
        "PySparkVersionError: ")
    stream_rows = -1 if stream_error else DeltaTable(stream_table).to_pyarrow_table().num_rows
    # Spark's own source feeds it: the pykafka stream reader needs PySpark 4.2. The writer is made when the first
    # micro-batch runs, so the error (if any) comes from processAllAvailable.
    write_stream_error = first_error(
        lambda: run_stream(spark.readStream.format("kafka").options(**options).option("startingOffsets", "earliest")
                           .load().select("value").writeStream.format("pykafka")
                           .option("kafka.bootstrap.servers", bootstrap).option("topic", f"{copy}-stream")
                           .option("checkpointLocation", tempfile.mkdtemp(prefix="compat-checkpoint-")).start()),
        "PySparkVersionError: ")
    spark.stop()
    report = {
        "pyspark": pyspark.__version__, "rows": len(rows), "same_as_spark_kafka": same, "log_rows": len(log),
        "log_same": log_same, "direct_rows": direct_rows, "direct_writer": direct.writer, "delta_rows": delta_rows,
        "spark_writer_error": spark_writer_error, "written_back": copied, "jars": pom_properties("spark"),
        "stream_rows": stream_rows, "stream_error": stream_error, "write_stream_error": write_stream_error,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main(*sys.argv[1:4])
