"""One batch load in a fresh process: the unit a crash test kills and re-runs.

    load_once.py BOOTSTRAP TOPIC TABLE MAX_RECORDS [SPARK_KEY=VALUE ...]

TABLE is a path, a store URI or a catalog name; KAFKA_SPARK_TEST_WRITER in the environment picks the
sink's writer (the sink's default unless set); the Spark settings (an object store's, a catalog's)
go to the session. It prints `session <epoch seconds>` once Spark is up (crash tests time kills from
there), then the load's summary as one line of JSON.
"""

from __future__ import annotations

import json
import os
import sys
import time

from kafka_spark.delta import load
from kafka_spark.local.spark import local_spark
from kafka_spark.sink import LoadOptions


def writer_option() -> dict[str, str]:
    """The writer the test asks for, else the sink's default."""
    writer = os.environ.get("KAFKA_SPARK_TEST_WRITER")
    return {"writer": writer} if writer else {}


def main() -> None:
    bootstrap, topic, table, cap = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    extra = dict(item.split("=", 1) for item in sys.argv[5:])
    spark = local_spark("kafka-spark-crash-test", extra=extra)
    print(f"session {time.time():.3f}", flush=True)
    result = load(spark, LoadOptions(table=table, kafka={"bootstrap.servers": bootstrap}, topics=[topic],
                                     sink_id="crash-test", max_records=cap,
                                     **writer_option()))
    print(json.dumps(result.summary()), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
