"""One run of a Kafka -> Delta stream in a fresh process: the unit a crash test kills and restarts.

    stream_once.py BOOTSTRAP TOPIC TABLE available-now|<interval> [SECONDS [MAX_OFFSETS_PER_TRIGGER [WRITER
                   [ARMED_AFTER]]]]

With REGISTRY_ENV set to a schema registry's URL, values are Avro and decoded into the table (EVOLUTION_ENV: the
sink's schemaEvolutionMode); with COMPACT_ENV, the table is compacted every that many commits. WRITER is the
sink's writer (spark, direct, auto); a crash point (the sink's CRASH_ENV) is armed once the run has committed
ARMED_AFTER micro-batches (default 0: from the first).
"""

from __future__ import annotations

import json
import os
import sys
import time

from kafka_spark.delta import start_stream
from kafka_spark.local.spark import local_spark
from kafka_spark.sink import StreamOptions
from kafka_spark.sink.crash import CRASH_ENV

REGISTRY_ENV = "KAFKA_SPARK_TEST_REGISTRY"
EVOLUTION_ENV = "KAFKA_SPARK_TEST_EVOLUTION"
COMPACT_ENV = "KAFKA_SPARK_TEST_COMPACT_EVERY"


def main() -> None:
    bootstrap, topic, table, trigger = sys.argv[1:5]
    seconds = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
    limit = int(sys.argv[6]) if len(sys.argv) > 6 else 400
    writer = sys.argv[7] if len(sys.argv) > 7 else "spark"
    armed_after = int(sys.argv[8]) if len(sys.argv) > 8 else 0
    crash_at = os.environ.pop(CRASH_ENV, None) if armed_after else None
    writers: list[str] = []

    def on_commit(_batch_id: int, result) -> None:
        writers.append(result.writer)
        if crash_at and len(writers) >= armed_after:
            os.environ[CRASH_ENV] = crash_at  # the sink reads it at each crash point

    spark = local_spark("kafka-spark-stream-crash-test")
    registry = os.environ.get(REGISTRY_ENV)
    decoding: dict = {"value_format": "avro", "schema_registry": {"url": registry}} if registry else {}
    if registry and os.environ.get(EVOLUTION_ENV):
        decoding["format_options"] = {"schemaEvolutionMode": os.environ[EVOLUTION_ENV]}
    options = StreamOptions(table=table, kafka={"bootstrap.servers": bootstrap}, topics=[topic], sink_id="crash-test",
                            starting="earliest", trigger=trigger, max_offsets_per_trigger=limit, writer=writer,
                            on_commit=on_commit, compact_every=int(os.environ.get(COMPACT_ENV) or 0) or None,
                            **decoding)
    query = start_stream(spark, options)
    print("started", flush=True)  # a crash test's kills are timed from here
    if trigger == "available-now":
        query.awaitTermination()
    else:
        query.awaitTermination(seconds)
        query.stop()
    print(json.dumps({"batches": len(query.recentProgress), "writers": writers}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
    time.sleep(0)
