"""One Iceberg batch load in a fresh process: the unit the crash test kills and runs again.

    iceberg_load_once.py BOOTSTRAP TOPIC WAREHOUSE TABLE MAX_RECORDS [WRITER]

The table is in the embedded catalog of WAREHOUSE. It prints `session <epoch seconds>` once Spark is up, then
the load's summary as one line of JSON.
"""

from __future__ import annotations

import json
import sys
import time

from kafka_spark.iceberg import IcebergCatalog, load
from kafka_spark.local.spark import local_spark
from kafka_spark.sink import LoadOptions


def main() -> None:
    bootstrap, topic, warehouse, table, cap = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    writer = sys.argv[6] if len(sys.argv) > 6 else "auto"
    spark = local_spark("kafka-spark-iceberg-crash-test")
    print(f"session {time.time():.3f}", flush=True)
    result = load(spark, LoadOptions(table=table, kafka={"bootstrap.servers": bootstrap}, topics=[topic],
                                     sink_id="crash-test", max_records=cap, writer=writer),
                  IcebergCatalog(warehouse=warehouse))
    print(json.dumps(result.summary()), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
