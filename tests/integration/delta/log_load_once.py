"""One back-fill from a broker's log dir in a fresh process: the unit a crash test kills and re-runs.

    log_load_once.py LOG_DIR TOPIC TABLE MAX_RECORDS

KAFKA_SPARK_TEST_WRITER in the environment picks the sink's writer (the sink's default unless set). It prints
`session <epoch seconds>` once Spark is up, then the load's summary as one line of JSON.
"""

from __future__ import annotations

import json
import sys
import time

from load_once import writer_option

from kafka_spark.delta import load
from kafka_spark.local.spark import local_spark
from kafka_spark.sink import LoadOptions


def main() -> None:
    log_dir, topic, table, cap = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    spark = local_spark("kafka-spark-crash-test")
    print(f"session {time.time():.3f}", flush=True)
    result = load(spark, LoadOptions(table=table, log_dirs=log_dir, topics=[topic], sink_id="crash-test",
                                     max_records=cap, **writer_option()))
    print(json.dumps(result.summary()), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
