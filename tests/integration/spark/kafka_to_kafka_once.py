"""One run of a Kafka -> Kafka stream in a fresh process: the unit the write crash test kills and restarts.

    kafka_to_kafka_once.py BOOTSTRAP IN_TOPIC OUT_TOPIC CHECKPOINT pykafka|kafka available-now|<seconds>

Reads with format("pykafka") and writes with format("pykafka") exactlyOnce=true, or with Spark's own
format("kafka") sink for comparison.
"""

from __future__ import annotations

import sys
import time

from kafka_spark.local.spark import local_spark


def main() -> None:
    bootstrap, source, target, checkpoint, sink, trigger = sys.argv[1:7]
    spark = local_spark("kafka-spark-write-crash-test")
    rows = (spark.readStream.format("pykafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", source).option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "400")
            .load().selectExpr("key", "value"))
    writer = (rows.writeStream.format(sink).option("kafka.bootstrap.servers", bootstrap).option("topic", target)
              .option("checkpointLocation", checkpoint))
    if sink == "pykafka":
        writer = writer.option("exactlyOnce", "true")
    writer = writer.trigger(availableNow=True) if trigger == "available-now" else writer.trigger(
        processingTime=f"{trigger} seconds")
    query = writer.start()
    print("started", flush=True)
    seen = None
    while query.isActive:
        progress = query.lastProgress
        if progress is not None and progress["batchId"] != seen:
            seen = progress["batchId"]
            print(f"progress {seen}", flush=True)  # a crash test's kills are timed from the first one
        time.sleep(0.1)
    query.awaitTermination()
    print("finished", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
