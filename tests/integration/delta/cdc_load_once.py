"""One change-capture load (Debezium events) in a fresh process: the unit the CDC crash test kills and re-runs.

    cdc_load_once.py BOOTSTRAP TOPIC TABLE [DEAD_LETTER_TABLE [HISTORY_TABLE]]

It prints `session <epoch seconds>` once Spark is up (kills are timed from there), then the load's summary as
one line of JSON.
"""

from __future__ import annotations

import json
import sys
import time

from kafka_spark.delta import load
from kafka_spark.local.spark import local_spark
from kafka_spark.sink import LoadOptions


def main() -> None:
    bootstrap, topic, table = sys.argv[1], sys.argv[2], sys.argv[3]
    dead_letter = sys.argv[4] if len(sys.argv) > 4 else None
    history = sys.argv[5] if len(sys.argv) > 5 else None
    spark = local_spark("kafka-spark-cdc-crash-test")
    print(f"session {time.time():.3f}", flush=True)
    result = load(spark, LoadOptions(table=table, kafka={"bootstrap.servers": bootstrap}, topics=[topic],
                                     sink_id="cdc-crash-test", cdc="debezium", cdc_metadata=True,
                                     dead_letter=dead_letter, cdc_history=history))
    print(json.dumps(result.summary()), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
