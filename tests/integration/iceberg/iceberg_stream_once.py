"""One run of a routed Kafka -> Iceberg stream in a fresh process: the unit the stream crash test kills and restarts.

    iceberg_stream_once.py BOOTSTRAP PATTERN WAREHOUSE CHECKPOINT available-now|<interval> SECONDS WRITER ARMED_AFTER

Every topic matching PATTERN goes to the table `db.<topic>` of the embedded catalog of WAREHOUSE, at most 150
records a micro-batch. A crash point (the sink's CRASH_ENV) is armed once the run has committed ARMED_AFTER
micro-batches (0: from the first). It prints `started` once the query runs (kills are timed from there).
"""

from __future__ import annotations

import os
import sys

from kafka_spark.iceberg import IcebergCatalog, start_stream
from kafka_spark.local.spark import local_spark
from kafka_spark.sink import Routing, StreamOptions
from kafka_spark.sink.crash import CRASH_ENV

SINK = "crash-test"


def routed_options(bootstrap: str, pattern: str, checkpoint: str, trigger: str, writer: str,
                   on_commit=None) -> StreamOptions:
    return StreamOptions(kafka={"bootstrap.servers": bootstrap}, pattern=pattern, sink_id=SINK, trigger=trigger,
                         max_offsets_per_trigger=150, routing=Routing(template="db.{topic}"), writer=writer,
                         checkpoint=checkpoint, starting="earliest", on_commit=on_commit)


def main() -> None:
    bootstrap, pattern, warehouse, checkpoint, trigger, seconds, writer, armed = sys.argv[1:9]
    crash_at = os.environ.pop(CRASH_ENV, None) if int(armed) else None
    commits: list[int] = []

    def on_commit(batch_id: int, _result) -> None:
        commits.append(batch_id)
        if crash_at and len(commits) >= int(armed):
            os.environ[CRASH_ENV] = crash_at  # the sink reads it at each crash point

    spark = local_spark("kafka-spark-iceberg-stream-crash-test")
    query = start_stream(spark, routed_options(bootstrap, pattern, checkpoint, trigger, writer, on_commit),
                         IcebergCatalog(warehouse=warehouse))
    print("started", flush=True)
    if trigger == "available-now":
        query.awaitTermination()
    else:
        query.awaitTermination(float(seconds))
        query.stop()
    print(f"micro-batches {len(commits)}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
