"""Runs inside a virtual environment with another PySpark and the built wheel: reads a topic with
`format("pykafka")` (registered by Spark itself, no `register()` call), checks it against Spark's own Kafka
source and a Delta round trip on the jars the harness picked for this PySpark, and reports the stream
reader's version error. Prints one JSON line."""

from __future__ import annotations

import json
import sys
import tempfile


def main(bootstrap: str, topic: str) -> None:
    import pyspark

    from kafka_spark.local.jars import pom_properties
    from kafka_spark.local.spark import local_spark

    spark = local_spark("kafka-spark-compat", master="local[2]")
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic}
    ours = spark.read.format("pykafka").options(**options).load()
    theirs = spark.read.format("kafka").options(**options).load()
    cols = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    rows = ours.select(*cols).collect()
    same = sorted(rows) == sorted(theirs.select(*cols).collect())
    table = tempfile.mkdtemp(prefix="compat-delta-")
    ours.write.format("delta").mode("overwrite").save(table)
    delta_rows = spark.read.format("delta").load(table).count()

    copy = f"{topic}-copy-{pyspark.__version__}"
    (ours.select("key", "value").write.format("pykafka").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", copy).mode("append").save())
    written = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", copy).load()
    copied = sorted(r.value for r in written.select("value").collect()) == sorted(r.value for r in rows)

    stream_error = ""
    try:
        query = spark.readStream.format("pykafka").options(**options).load().writeStream.format("noop").start()
        try:
            query.processAllAvailable()
        finally:
            query.stop()
    except Exception as exc:  # Spark wraps the Python error; the line that names it is what users read
        lines = str(exc).splitlines()
        stream_error = next((line.strip() for line in lines if "PySparkVersionError: " in line), lines[0])
    write_stream_error = ""
    try:
        # Spark's own source feeds it: the pykafka stream reader needs PySpark 4.2. The writer is made when the
        # first micro-batch runs, so the error (if any) comes from processAllAvailable.
        query = (spark.readStream.format("kafka").options(**options).option("startingOffsets", "earliest").load()
                 .select("value").writeStream.format("pykafka").option("kafka.bootstrap.servers", bootstrap)
                 .option("topic", f"{copy}-stream")
                 .option("checkpointLocation", tempfile.mkdtemp(prefix="compat-checkpoint-")).start())
        try:
            query.processAllAvailable()
        finally:
            query.stop()
    except Exception as exc:
        lines = str(exc).splitlines()
        write_stream_error = next((line.strip() for line in lines if "PySparkVersionError: " in line), lines[0])
    spark.stop()
    print(json.dumps({"pyspark": pyspark.__version__, "rows": len(rows), "same_as_spark_kafka": same,
                      "delta_rows": delta_rows, "written_back": copied, "jars": pom_properties("spark"),
                      "stream_error": stream_error, "write_stream_error": write_stream_error}))


if __name__ == "__main__":
    main(*sys.argv[1:3])
