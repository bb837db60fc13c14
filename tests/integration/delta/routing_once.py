"""One run of a routed Kafka -> Delta stream (a table per topic) in a fresh process: what a crash test kills.

    routing_once.py BOOTSTRAP PATTERN LAKE available-now|<interval> [SECONDS [WRITER]]

Every topic matching PATTERN goes to LAKE/<topic>; the checkpoint is LAKE/_kafka_spark/checkpoints/<sink>.
"""

from __future__ import annotations

import json
import sys

from kafka_spark.delta import start_stream
from kafka_spark.local.spark import local_spark
from kafka_spark.sink import Routing, StreamOptions

SINK = "routed-crash-test"


def routed_options(bootstrap: str, pattern: str, lake: str, trigger: str, limit: int | None = 300,
                   writer: str = "spark") -> StreamOptions:
    """Every topic matching `pattern` into `lake`/<topic>, at most `limit` records a micro-batch."""
    return StreamOptions(kafka={"bootstrap.servers": bootstrap}, pattern=pattern, sink_id=SINK, trigger=trigger,
                         max_offsets_per_trigger=limit, routing=Routing(template=f"{lake}/{{topic}}"), writer=writer)


def main() -> None:
    bootstrap, pattern, lake, trigger = sys.argv[1:5]
    seconds = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
    writer = sys.argv[6] if len(sys.argv) > 6 else "spark"
    spark = local_spark("kafka-spark-routed-crash-test")
    query = start_stream(spark, routed_options(bootstrap, pattern, lake, trigger, writer=writer))
    print("started", flush=True)  # a crash test's kills are timed from here
    if trigger == "available-now":
        try:
            query.awaitTermination()
        except Exception as exc:  # the query's failure, shown below
            print(f"the query failed: {str(exc)[:3000]}", flush=True)
            raise SystemExit(1) from None
    else:
        query.awaitTermination(seconds)
        query.stop()
    if query.exception() is not None:
        print(f"the query failed: {query.exception()}", flush=True)  # stdout: the crash tests read it
        raise SystemExit(1)
    print(json.dumps({"batches": len(query.recentProgress)}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
